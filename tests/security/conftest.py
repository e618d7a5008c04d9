"""A world with objects of panel A and panel B, for the access matrix and the blind rules.

Besides the six plain personas (anonymous, an expert of each panel, a supervisor of each panel,
an admin) the world has the combinations where access rules break first: an expert of both
panels, an expert of A who supervises B, a supervisor of A who is also an expert of A, and a
second supervisor of A; and an answer routed to both panels (work of both).

Everything secret that an expert must never see is written with a marker from SECRETS, so every
page an expert receives can be searched for all of them at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.apps import apps
from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.test import TestCase

from guidelines.services import ExampleInput, guideline_save
from jobs.models import Job, JobKind, JobStatus
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Expert, Membership, Panel
from quality.exams import (
    ReferenceInput,
    exam_attempt_start,
    exam_create,
    exam_item_add,
    exam_references_set,
)
from quality.models import Exam, ExamAttempt, ExamItem
from taxonomy.models import FunctionalStyle, Task
from taxonomy.services import criteria_for
from tests.conftest import Personas, make_expert, make_personas, make_user, rubric_of
from work.assignments import assignments_build
from work.comparisons import comparisons_build
from work.models import Assignment, Flag
from work.services import ScoreInput, assignment_submit


def pytest_configure(config: pytest.Config) -> None:
    # The integrator registers these in pyproject; until then they are declared here.
    config.addinivalue_line("markers", "faults: fault injection on the real stack")
    config.addinivalue_line("markers", "load: load test against gunicorn")


# What an expert must never receive: the model's identity, another expert's rationale, an exam
# reference comment. Each is unique enough that a substring search cannot miss or misfire.
MODEL_NAME = "SecretModel-Zeta9"
OTHER_RATIONALE = "Чужое обоснование номер семь, секретное."
REFERENCE_COMMENT = "Эталонный комментарий экзамена, тайный."
# The author of the panels' guidelines (and his change notes): shown to supervisors only.
GUIDELINE_AUTHOR = "GuidelineAuthor-Q7"
GUIDELINE_NOTE = "Примечание автора руководства, только супервизорам."
SECRETS = (MODEL_NAME, OTHER_RATIONALE, REFERENCE_COMMENT, GUIDELINE_AUTHOR, GUIDELINE_NOTE)
GOOD = "Ответ соответствует критерию, замечаний нет."


@dataclass
class Side:
    """The objects of one panel: everything a URL's kwargs may point at."""

    panel: Panel
    expert: Expert
    supervisor: User
    answer: Answer
    assignment: Assignment
    job: Job
    exam: Exam
    exam_item: ExamItem
    attempt: ExamAttempt
    # A judge run scoped to the panel (None while the judging app is not installed).
    judge_run: Any = None
    # The expert's side-by-side work: a pair of two models' answers (work.comparisons).
    pair_assignment: Any = None
    # An open broken-item flag of the expert's assignment (work.flags; not released here, so
    # the assignment's own routes stay open).
    flag: Any = None
    # The panel-wide guideline, in two versions (guidelines.services).
    guideline: Any = None
    # The expert's span markup work: a draft markup of the world's markup text (markup.work).
    markup_work: Any = None
    # A participant's markup run over the world's sample, its text released (markup.contest);
    # A's run is participant_a's, B's participant_b's.
    markup_run: Any = None
    # A text assigned to the panel (markup.work): two submitted independent markups by its
    # experts, a participant's system's markup and the side's expert's draft (markups_of_side).
    markup_text: Any = None
    # A scored submission of the side's participant (participant_a / participant_b).
    submission: Any = None
    # The expert's instruction in review (authoring; the expert writes for his panel) and an
    # open slot of the panel's plan he may take; his human-baseline answer to write.
    slot: Any = None
    take: dict[str, Any] = field(default_factory=dict)
    baseline: Any = None


@dataclass
class World:
    personas: Personas
    a: Side
    b: Side
    users: dict[str, User | None] = field(default_factory=dict)
    # An answer both panels score (Science its domain criteria, Literature its task criteria).
    shared: Answer | None = None
    # Objects that belong to no panel (admin-only jobs).
    import_job: Job | None = None
    export_job: Job | None = None
    aggregate_job: Job | None = None
    pair_job: Job | None = None
    # A span-marked text with two imported markups (no panel's) and each side's expert's draft
    # (so assigned to both panels; each side has a text of its own panel besides).
    markup_text: Any = None
    # Participants (markup.contest) by the side whose run is theirs.
    participants: dict[str, User] = field(default_factory=dict)
    # A private leaderboard with a computed snapshot (no panel's), and a model it ranks.
    leaderboard: Any = None
    leaderboard_model: int = 0
    # A board taking submissions (private, like the other).
    submission_board: Any = None
    # A writing campaign (authoring) and a generation run (admins').
    campaign: Any = None
    generation_config: Any = None
    generation_run: Any = None

    def side(self, owner: str) -> Side:
        return self.a if owner == "A" else self.b


def _answer(task: Task, n: int, model: str, style_key: str | None = None) -> Answer:
    from material.models import LanguageModel
    from taxonomy.models import FunctionalStyle

    instruction = Instruction.objects.create(
        external_id=f"sec-{n}",
        text=f"Инструкция для проверки доступа №{n}.",
        reference_answer="",
        task=task,
        style=FunctionalStyle.objects.get(key=style_key) if style_key else task.style,
        complexity="medium",
    )
    lm, _ = LanguageModel.objects.get_or_create(name=model, version="1")
    return Answer.objects.create(
        instruction=instruction, model=lm, text=f"Ответ модели №{n}.", text_hash=f"sec{n}"
    )


def _exam_of(panel: Panel, sup: User, source: Answer, expert: Expert) -> tuple[Exam, ExamItem, Any]:
    exam = exam_create(panel=panel, title=f"Экзамен {panel.key}", user=sup, is_active=True)
    exam, item = exam_item_add(exam=exam, answer=source, user=sup)
    criterion = next(c for c in criteria_for(source.instruction) if c.rubric is not None)
    assert criterion.rubric is not None
    exam = exam_references_set(
        exam=exam,
        rows=[
            ReferenceInput(
                answer_id=item.scored_answer_id,
                criterion_id=criterion.pk,
                score=criterion.rubric.values[0],
                is_na=False,
                comment=REFERENCE_COMMENT,
            )
        ],
        user=sup,
    )
    item = exam.items.get()
    # The candidate is a separate, unqualified member: qualified experts may not need exams.
    return exam, item, expert


def _pair_assignment_of(panel: Panel, expert: Expert, key: str) -> Assignment:
    """A side-by-side pair routed to the panel; the expert's assignment of it (the model names
    are among the secrets an expert's page must never show)."""
    instruction = Instruction.objects.create(text=f"Сравните два ответа ({key}).")
    answers = [
        Answer.objects.create(
            instruction=instruction,
            model=LanguageModel.objects.get_or_create(name=name, version="1")[0],
            text=f"Ответ {side} для сравнения ({key}).",
            text_hash=f"pair-{key}-{side}",
        )
        for side, name in (("a", MODEL_NAME), ("b", MODEL_NAME + "-rival"))
    ]
    pair = AnswerPair.objects.create(
        instruction=instruction, answer_a=answers[0], answer_b=answers[1]
    )
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[pair.pk], seed=1)
    return Assignment.objects.get(pair=pair, expert=expert)


def _guideline_of(panel: Panel, author: User) -> Any:
    """The panel's panel-wide guideline in two versions, by an author experts must not see."""
    for n in (1, 2):
        version, _ = guideline_save(
            panel=panel,
            criterion=None,
            body=f"Руководство панели {panel.key}, редакция {n}.",
            examples=[ExampleInput(kind="good", text="Хороший пример.", score=3)],
            change_note=GUIDELINE_NOTE,
            user=author,
        )
    return version.guideline


def _private_file(name: str) -> str:
    root = Path(settings.PRIVATE_STORAGE_ROOT)
    (root / "exports").mkdir(parents=True, exist_ok=True)
    (root / "exports" / name).write_bytes(b"PK\x03\x04 not really a zip")
    return f"exports/{name}"


@pytest.fixture
def world(personas: Personas, django_capture_on_commit_callbacks: Callable[..., Any]) -> World:
    return build_world(personas, django_capture_on_commit_callbacks)


@pytest.fixture(scope="module")
def world_once(django_db_setup: None, django_db_blocker: Any) -> Iterator[World]:
    """The world built once for a module whose tests only read it (each test runs in a savepoint
    of its own, which the `db` fixture rolls back): it is built in a transaction that is rolled
    back after the module's last test. Keep such a module's tests in xdist groups (the access
    matrix does), so a worker runs them one after the other and builds the world once."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
        try:
            yield build_world(make_personas(), TestCase.captureOnCommitCallbacks)
        finally:
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


def build_world(personas: Personas, capture_on_commit: Callable[..., Any]) -> World:
    science = Task.objects.get(
        is_leaf=True, path__endswith="Original Text Generation / Scientific text / Academic text"
    )
    literary = Task.objects.filter(is_leaf=True, path__contains="Literary text").first()
    assert literary is not None
    ans_a, ans_b = _answer(science, 1, MODEL_NAME), _answer(literary, 2, MODEL_NAME)
    # A second expert on each panel scores the same answers: their rationale is a secret.
    peer_a = make_expert("peer_a", personas.panel_a)
    peer_b = make_expert("peer_b", personas.panel_b)
    assignments_build(answer_ids=[ans_a.pk, ans_b.pk])
    for peer, answer in ((peer_a, ans_a), (peer_b, ans_b)):
        peer_assignment = Assignment.objects.filter(expert=peer, answer=answer).first()
        assert peer_assignment is not None, "the builder gave the peer no work"
        items = [
            ScoreInput(
                triple_id=e.triple_id,
                score=0 if e.triple.group == "critical" else max(rubric_of(e.triple).values),
                rationale=OTHER_RATIONALE,
            )
            for e in peer_assignment.estimates.select_related("triple__rubric")
        ]
        with capture_on_commit(execute=True):
            result = assignment_submit(assignment=peer_assignment, items=items)
        assert result.ok, (result.errors, result.form_errors)

    guideline_author = make_user(GUIDELINE_AUTHOR, is_staff=True)
    sides = {}
    for key, panel, expert, sup, answer in (
        ("A", personas.panel_a, personas.expert_a, personas.supervisor_a, ans_a),
        ("B", personas.panel_b, personas.expert_b, personas.supervisor_b, ans_b),
    ):
        assignment = Assignment.objects.get(expert=expert, answer=answer, panel=panel)
        job = Job.objects.create(kind=JobKind.ASSIGNMENTS, params={"panel_id": panel.pk})
        candidate = make_expert(f"cand_{key.lower()}", panel, qualified=False)
        exam, item, _ = _exam_of(panel, sup, answer, candidate)
        with capture_on_commit(execute=True):
            attempt = exam_attempt_start(exam=exam, expert=candidate)
        sides[key] = Side(panel, expert, sup, answer, assignment, job, exam, item, attempt)
        sides[key].pair_assignment = _pair_assignment_of(panel, expert, key)
        sides[key].flag = Flag.objects.create(
            assignment=assignment, expert=expert, kind="broken", reason="garbled"
        )
        sides[key].guideline = _guideline_of(panel, guideline_author)
    world = World(personas=personas, a=sides["A"], b=sides["B"])
    # The combined personas join after A's and B's work was handed out (the plain experts keep
    # theirs); they get work on an answer routed to both panels.
    panel_a, panel_b = personas.panel_a, personas.panel_b
    expert_ab = make_expert("expert_ab", panel_a, panel_b)
    sup_a_expert_a = make_expert("sup_a_expert_a", panel_a)
    panel_a.supervisors.add(sup_a_expert_a.user)
    sup_b_expert_a = make_expert("sup_b_expert_a", panel_a)
    panel_b.supervisors.add(sup_b_expert_a.user)
    sup_a2 = make_user("sup_a2")
    panel_a.supervisors.add(sup_a2)
    poetry = Task.objects.get(is_leaf=True, path__endswith="Literary text / Poetry")
    world.shared = _answer(poetry, 3, MODEL_NAME, style_key="scientific-text")
    assignments_build(answer_ids=[world.shared.pk])
    assert {t.panel_id for t in world.shared.triples.all()} >= {panel_a.pk, panel_b.pk}
    # Work of both panels on it (the builder prefers fresh eyes: one panel per expert if it can).
    on_shared = set(
        Assignment.objects.filter(answer=world.shared).values_list("panel_id", flat=True)
    )
    assert on_shared >= {panel_a.pk, panel_b.pk}
    if apps.is_installed("judging"):
        from judging.services import config_save, run_create

        config = config_save(name="security", batch_size=2, model_family="giga")
        for side in (world.a, world.b):
            side.judge_run = run_create(
                config=config, scope={"panel": side.panel.pk}, enqueue=False
            )
    world.users = {
        "anon": None,
        "expert_a": personas.expert_a.user,
        "expert_b": personas.expert_b.user,
        "sup_a": personas.supervisor_a,
        "sup_b": personas.supervisor_b,
        "admin": personas.admin,
        # Candidates of an exam are experts too: their pages are searched for secrets as well.
        "cand_a": sides["A"].attempt.expert.user,
        "expert_ab": expert_ab.user,
        "sup_a_expert_a": sup_a_expert_a.user,
        "sup_b_expert_a": sup_b_expert_a.user,
        "sup_a2": sup_a2,
    }
    world.import_job = Job.objects.create(kind=JobKind.IMPORT, status=JobStatus.DONE)
    world.export_job = Job.objects.create(
        kind=JobKind.EXPORT,
        status=JobStatus.DONE,
        params={"format": "parquet"},
        file_path=_private_file("dataset-security.zip"),
    )
    world.aggregate_job = Job.objects.create(kind=JobKind.AGGREGATE, status=JobStatus.DONE)
    world.pair_job = Job.objects.create(kind=JobKind.PAIR_IMPORT, status=JobStatus.DONE)
    if apps.is_installed("markup"):
        world.markup_text = _markup_text()
        for key, side in (("A", world.a), ("B", world.b)):
            side.markup_work = _markup_work(world.markup_text, side, key)
            peer = peer_a if key == "A" else peer_b
            side.markup_text = _markup_text_of_panel(key, side, peer)
        _markup_runs(world)
    if apps.is_installed("leaderboards"):
        from dataset.models import TripleAggregate
        from leaderboards.models import Leaderboard
        from leaderboards.services import snapshot_store
        from work.models import Triple

        # One verdict, so that the board ranks a model (the page of one model is a route).
        first = Triple.objects.filter(kind="pointwise").exclude(group="critical").first()
        assert first is not None
        TripleAggregate.objects.get_or_create(
            triple=first, defaults={"n_estimates": 2, "mean": 1.0}
        )
        world.leaderboard = Leaderboard.objects.create(slug="security-board", title="Board")
        snapshot = snapshot_store(world.leaderboard, rounds=10)
        ranked = snapshot.data["sources"][0]["models"]
        world.leaderboard_model = ranked[0]["model"] if ranked else 0
    if apps.is_installed("submissions") and world.participants:
        _submissions(world)
    if apps.is_installed("authoring"):
        _authoring(world, expert_ab, sup_a_expert_a)
    if apps.is_installed("generation"):
        from generation.services import config_save as generation_config_save
        from generation.services import run_create as generation_run_create

        world.generation_config = generation_config_save(
            name="security-gen",
            model_name="Security-LM",
            backend="openai",
            endpoint="http://127.0.0.1:9/v1",
        )
        world.generation_run = generation_run_create(
            config=world.generation_config, scope={"all": True, "limit": 1}, enqueue=False
        )
    return world


def _authoring(world: World, reviewer: Expert, editor: Expert) -> None:
    """A campaign with the POLLUX default plan; each side's expert writes for his panel and has
    an instruction in review; expert_ab reviews both panels, sup_a_expert_a proofreads A's."""
    from authoring import baseline, services
    from authoring.models import Quota

    for side in (world.a, world.b):
        Membership.objects.filter(expert=side.expert, panel=side.panel).update(can_author=True)
    Membership.objects.filter(expert=reviewer).update(can_review=True)
    Membership.objects.filter(expert=editor).update(can_edit=True)
    world.campaign = services.campaign_create(
        name="security-writing", user=world.personas.admin, double_review_share=0.0
    )
    for side in (world.a, world.b):
        quota = Quota.objects.filter(
            plan__campaign=world.campaign, panel=side.panel, count__gt=1
        ).first()
        assert quota is not None
        side.take = {"panel": side.panel.pk, "task": quota.task_id, "complexity": quota.complexity}
        slot = services.slot_take(
            campaign=world.campaign,
            expert=side.expert,
            panel=side.panel,
            task=quota.task,
            complexity=quota.complexity,
        )
        style = quota.task.style_id or FunctionalStyle.objects.values_list("pk", flat=True)[0]
        services.slot_submit(
            slot=slot,
            values={"text": f"Инструкция панели {side.panel.key}", "style": style},
            user=side.expert.user,
        )
        side.slot = slot
        [side.baseline] = baseline.baseline_sample(
            panel=side.panel, size=1, user=world.personas.admin
        )


def _submissions(world: World) -> None:
    """A private board taking submissions, and a scored submission of each side's participant
    (stored as scoring leaves it: the scoring itself is tests/submissions')."""
    from judging.services import config_save
    from leaderboards.models import Leaderboard
    from material.models import LanguageModel
    from submissions.models import State, Submission

    config = config_save(name="security-judge", backend="openai", endpoint="http://127.0.0.1:9/")
    world.submission_board = Leaderboard.objects.create(
        slug="security-submit",
        title="Submissions board",
        # Internal: a participant reads it (a private board is not open to participants).
        visibility="internal",
        accepts_submissions=True,
        judge_config=config,
        submissions_per_day=100,
    )
    for key, side in (("A", world.a), ("B", world.b)):
        participant = world.participants[key].participant
        side.submission = Submission.objects.create(
            participant=participant,
            leaderboard=world.submission_board,
            model=LanguageModel.objects.create(name=f"Entry {key}", version="1 #0"),
            state=State.SCORED,
            model_name=f"Entry {key}",
            model_version="1",
            parameters="1B",
            gpus="none",
            logs="-",
            file_name="answers.csv",
            content_sha256=key * 64,
            answers=1,
            judge_config=config,
            result={"mean": 0.5, "low": 0.4, "high": 0.6, "judge": "security-judge"},
        )
    world.b.submission.state = State.REQUESTED
    world.b.submission.save(update_fields=["state"])


def _markup_runs(world: World) -> None:
    """Two approved participants, each with a run over a one-text sample, the text released."""
    from markup import contest
    from markup.models import MarkupSample, MarkupSampleText
    from participants.models import Participant

    sample = MarkupSample.objects.create(name="security sample", deadline_s=3600)
    MarkupSampleText.objects.create(sample=sample, text=world.markup_text, position=0)
    for key, side in (("A", world.a), ("B", world.b)):
        user = make_user(f"participant_{key.lower()}")
        participant = Participant.objects.create(user=user, organisation=key, approved=True)
        side.markup_run = contest.run_open(participant, sample, f"System {key}")
        contest.run_next(side.markup_run)
        world.participants[key] = user


# Markers of each kind of markup a markup page may show, per side ({key}: A or B): who may read
# which is markup.rules' (tests/security/test_access_matrix.py searches the pages for them).
MARKUP_SUBMITTED = "PanelMarkup-{key}"
MARKUP_DRAFT = "DraftMarkup-{key}"
MARKUP_SYSTEM = "SystemMarkup-{key}"


def _markup_work(text: Any, side: Side, key: str) -> Any:
    """The side's expert's assigned markup of `text` (a draft, as markup.work assigns it)."""
    from markup.models import Markup, MarkupRole, MarkupStatus

    return Markup.objects.create(
        text=text,
        source="expert",
        expert=side.expert,
        author=MARKUP_DRAFT.format(key=key),
        panel=side.panel,
        role=MarkupRole.INDEPENDENT,
        status=MarkupStatus.DRAFT,
    )


def _markup_text() -> Any:
    """A text with two experts' span markups (markup.services)."""
    from markup.services import markup_store
    from protocol.markup_format import MarkupDocument, default_meta
    from protocol.spans import Fragment

    text = "Читая книгу, снег падал."
    stored = None
    for expert, end in (("E1", 11), ("E2", 23)):
        meta = default_meta()
        meta.update(uuid="sec-markup", subject="rus", expert=expert)
        fragments = [Fragment(0, end, "Г.деепр")]
        stored = markup_store(MarkupDocument(text, fragments, meta)).text
    return stored


def _markup_text_of_panel(key: str, side: Side, peer: Expert) -> Any:
    """A text assigned to the side's panel: two submitted independent markups by its experts
    (the side's expert and his peer), a participant's system's markup, and a draft of the
    side's expert on the world's shared text (`_markup_work`)."""
    from markup.models import Markup, MarkupRole, MarkupSource, MarkupStatus
    from markup.services import markup_store
    from protocol.markup_format import MarkupDocument, default_meta
    from protocol.spans import Fragment

    text = f"Читая книгу панели {key}, снег падал."
    stored = None
    for n, (expert, end) in enumerate(((side.expert, 11), (peer, 20)), start=1):
        meta = {**default_meta(), "uuid": f"sec-markup-{key}", "subject": "rus"}
        document = MarkupDocument(text, [Fragment(0, end, "Г.деепр")], meta)
        stored = markup_store(
            document, author=f"{MARKUP_SUBMITTED.format(key=key)}-{n}", expert=expert
        )
        Markup.objects.filter(pk=stored.pk).update(
            panel=side.panel, role=MarkupRole.INDEPENDENT, status=MarkupStatus.SUBMITTED
        )
    assert stored is not None
    meta = {**default_meta(), "uuid": f"sec-markup-{key}", "subject": "rus"}
    markup_store(
        MarkupDocument(text, [Fragment(0, 5, "Г.деепр")], meta),
        source=MarkupSource.ALGORITHM,
        author=MARKUP_SYSTEM.format(key=key),
    )
    return stored.text
