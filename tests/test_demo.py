"""seed_demo: the newcomer's first command. It must load, print logins, and be safe to rerun."""

from __future__ import annotations

import re
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db.models import Model
from django.test import Client
from django.urls import reverse

from demo.demo_data import DEMO_ADMIN, DEMO_EXPERT, DEMO_EXPERTS, DEMO_PASSWORD, DEMO_SUPERVISOR
from demo.demo_guidelines import DEMO_GUIDELINE_CRITERION, DEMO_GUIDELINE_PANEL
from demo.demo_material import DEMO_INSTRUCTIONS, DEMO_MODELS, text_hash
from demo.demo_pairs import DEMO_PAIRS, PAST_PREFIX, pair_external_id
from guidelines.models import GuidelineVersion
from markup.models import Markup, MarkupText
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Expert, Membership, Panel
from taxonomy.models import Criterion, Rubric
from work.models import Assignment, AssignmentKind, AssignmentStatus, Estimate, Triple

User = get_user_model()


@pytest.fixture
def demo_settings(settings: Any) -> Any:
    """What config.settings.local switches on; the test settings have neither flag."""
    settings.POLLUX_DEMO = True
    settings.SUBMISSION_ENDPOINT_ALLOW_PRIVATE = True
    return settings


def seed() -> str:
    out = StringIO()
    # The demo judge run (minutes on CPU once the judge extra is in) belongs to the judge tests.
    call_command("seed_demo", "--no-judge", stdout=out)
    return out.getvalue()


def counts() -> dict[str, int]:
    tables: list[type[Model]] = [
        User,
        Expert,
        Membership,
        Panel,
        Criterion,
        Rubric,
        LanguageModel,
        Instruction,
        Answer,
        Triple,
        Assignment,
        Estimate,
        GuidelineVersion,
        MarkupText,
        Markup,
    ]
    return {model.__name__: model._default_manager.count() for model in tables}


@pytest.mark.django_db
def test_it_refuses_to_seed_under_non_demo_settings(settings: Any) -> None:
    settings.DEBUG = False
    settings.POLLUX_DEMO = False
    with pytest.raises(CommandError, match="--force"):
        call_command("seed_demo", stdout=StringIO())
    assert not User.objects.exists()
    assert not Answer.objects.exists()


@pytest.mark.django_db
def test_it_seeds_catalogue_panels_people_and_material(demo_settings: Any, client: Any) -> None:
    out = seed()

    assert Criterion.objects.exists()
    assert Panel.objects.count() == 11
    admin = User.objects.get(username=DEMO_ADMIN.username)
    assert admin.is_staff and admin.is_superuser
    supervisor = User.objects.get(username=DEMO_SUPERVISOR.username)
    assert set(supervisor.supervised_panels.values_list("key", flat=True)) == set(
        DEMO_SUPERVISOR.panels
    )
    for person in DEMO_EXPERTS:
        expert = Expert.objects.get(user__username=person.username)
        assert set(expert.panels.values_list("key", flat=True)) == set(person.panels)
        assert expert.profession and expert.education and expert.region
    # The logins are printed, with the one password that opens them all.
    assert DEMO_PASSWORD in out
    for person in (DEMO_ADMIN, DEMO_SUPERVISOR, *DEMO_EXPERTS):
        assert re.search(rf"\b{person.username}\b", out)

    rubric = Instruction.objects.filter(external_id__startswith="demo-", task__isnull=False)
    assert rubric.count() == len(DEMO_INSTRUCTIONS)
    answers = Answer.objects.filter(external_id__startswith="demo-")
    assert answers.filter(instruction__task__isnull=False).count() == sum(
        len(item.answers) for item in DEMO_INSTRUCTIONS
    )
    # The side-by-side project: a query each, two answers of different demo models.
    assert AnswerPair.objects.filter(external_id__startswith="demo-sbs-").count() == len(DEMO_PAIRS)
    assert answers.filter(instruction__task__isnull=True).count() == 2 * len(DEMO_PAIRS)
    assert all(answer.text_hash == text_hash(answer.text) for answer in answers)
    assert Instruction.objects.exclude(reference_answer="").exists()
    # Each instruction carries the functional style of its catalogue leaf.
    assert not Instruction.objects.filter(style__isnull=True, task__style__isnull=False).exists()

    # The printed password really opens the printed account, through the login page.
    response = client.post(reverse("login"), {"username": DEMO_EXPERT, "password": DEMO_PASSWORD})
    assert response.status_code == 302
    assert int(client.session["_auth_user_id"]) == User.objects.get(username=DEMO_EXPERT).pk


@pytest.mark.django_db
def test_a_second_run_creates_nothing_and_force_overrides_the_guard(demo_settings: Any) -> None:
    seed()
    first = counts()
    # Someone changed the demo password: a rerun must not reset it behind their back.
    anna = User.objects.get(username=DEMO_EXPERT)
    anna.set_password("changed-by-anna")
    anna.save(update_fields=["password"])

    demo_settings.POLLUX_DEMO = False
    demo_settings.DEBUG = False
    out = StringIO()
    call_command("seed_demo", "--force", "--no-judge", stdout=out)

    assert counts() == first
    assert "nothing new" in out.getvalue()
    anna.refresh_from_db()
    assert anna.check_password("changed-by-anna")


@pytest.mark.django_db
def test_the_demo_expert_has_work_in_the_queue(demo_settings: Any) -> None:
    seed()
    open_work = Assignment.objects.filter(
        expert__user__username=DEMO_EXPERT,
        kind=AssignmentKind.WORK,
        status__in=[AssignmentStatus.ASSIGNED, AssignmentStatus.IN_PROGRESS],
    )
    assert open_work.exists()
    # Her work spans several instructions, not one answer repeated.
    assert open_work.values("answer__instruction").distinct().count() > 3
    # And the side-by-side pairs: each with three annotators of the Editing panel, her among
    # them, placed A/B at random per assignment (both placements occur).
    pairs = Assignment.objects.filter(
        pair__external_id__in=[pair_external_id(p) for p in DEMO_PAIRS]
    )
    assert pairs.count() == 3 * len(DEMO_PAIRS)
    assert open_work.filter(pair__isnull=False).count() == len(DEMO_PAIRS)
    assert set(pairs.values_list("swapped", flat=True)) == {True, False}


@pytest.mark.django_db
def test_the_demo_expert_reads_the_crowd_panels_guidelines(demo_settings: Any, client: Any) -> None:
    seed()
    crowd = Panel.objects.get(key=DEMO_GUIDELINE_PANEL)
    versions = GuidelineVersion.objects.filter(guideline__panel=crowd)
    assert set(versions.values_list("guideline__criterion__key", flat=True)) == {
        None,
        DEMO_GUIDELINE_CRITERION,
    }
    gate = versions.get(guideline__criterion__key=DEMO_GUIDELINE_CRITERION)
    assert set(gate.examples.values_list("kind", flat=True)) == {"good", "bad", "hard"}
    assert client.login(username=DEMO_EXPERT, password=DEMO_PASSWORD)
    url = reverse("guidelines_panel", args=[crowd.pk])
    html = client.get(f"{url}?criterion={DEMO_GUIDELINE_CRITERION}").content.decode()
    assert "Critical criteria come first" in html and "нельзя оценить" in html
    # Written by the demo supervisor: the expert sees the version, not its author.
    assert DEMO_SUPERVISOR.username not in html


def test_the_demo_material_is_varied() -> None:
    """The issue asks for ~10 task groups, references, 3-4 models, a code block and a table."""
    top_tasks = {item.task_path.split(" / ")[1] for item in DEMO_INSTRUCTIONS}
    assert len(top_tasks) >= 9
    assert 3 <= len(DEMO_MODELS) <= 4
    model_keys = {model.key for model in DEMO_MODELS}
    assert all(set(item.answers) <= model_keys for item in DEMO_INSTRUCTIONS)
    assert sum(1 for item in DEMO_INSTRUCTIONS if item.reference) >= 4
    texts = [text for item in DEMO_INSTRUCTIONS for text in item.answers.values()]
    assert 24 <= len(texts) <= 60
    assert any("```python\n" in text for text in texts)
    assert any(re.search(r"^\|[-: |]+\|$", text, re.MULTILINE) for text in texts)
    lengths = sorted(len(text) for text in texts)
    assert lengths[0] < 100 < 1000 < lengths[-1]


@pytest.mark.django_db
def test_the_demo_has_a_practice_exam_with_explained_references(
    demo_settings: Any, client: Any
) -> None:
    from demo.demo_data import DEMO_PRACTICE_TITLE
    from quality.models import Exam, ReferenceScore

    seed()
    exam = Exam.objects.get(title=DEMO_PRACTICE_TITLE)
    assert exam.is_practice and exam.is_active
    refs = ReferenceScore.objects.filter(item__exam=exam)
    assert refs.exists() and not refs.filter(comment="").exists()
    # On a panel of the expert a newcomer logs in as: she finds it in her list.
    member = Membership.objects.get(panel=exam.panel, expert__user__username=DEMO_EXPERT)
    client.force_login(member.expert.user)
    html = client.get(reverse("my_exams")).content.decode()
    assert DEMO_PRACTICE_TITLE in html and "start-exam" in html


@pytest.mark.django_db
def test_the_demo_has_a_public_leaderboard_from_the_panels_past_work(demo_settings: Any) -> None:
    from django.test import Client

    from demo.demo_leaderboard import DEMO_BOARD, QUALITY
    from leaderboards.models import Leaderboard

    seed()
    board = Leaderboard.objects.get(slug=DEMO_BOARD)
    assert board.visibility == "public"
    snapshot = board.snapshots.first()
    assert snapshot is not None
    (experts,) = [s for s in snapshot.data["sources"] if s["key"] == "experts"]
    names = {str(m.pk): m.name for m in LanguageModel.objects.all()}
    means = {names[str(r["model"])]: r["mean"] for r in experts["models"]}
    assert set(means) == {m.name for m in DEMO_MODELS}
    assert all(mean is not None for mean in means.values())
    best = max(QUALITY, key=QUALITY.__getitem__)
    worst = min(QUALITY, key=QUALITY.__getitem__)
    assert means[best] > means[worst]
    # The newcomer's expert still has all her work: the other experts' past was scripted, and
    # of hers only the side-by-side panel's past pairs (REPA's three labels need all three of
    # the Editing panel).
    assert (
        not Assignment.objects.filter(
            expert__user__username=DEMO_EXPERT, status=AssignmentStatus.SUBMITTED
        )
        .exclude(pair__external_id__startswith=PAST_PREFIX)
        .exists()
    )
    # An anonymous visitor reads it: model names and scores, no output.
    page = Client().get(reverse("leaderboard", args=[DEMO_BOARD])).content.decode()
    assert all(m.name in page for m in DEMO_MODELS)
    assert not any(a.text[:60] in page for a in Answer.objects.all())


@pytest.mark.django_db
def test_the_demo_participant_submits_the_example_and_reads_his_private_score(
    demo_settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    """The demo board takes submissions, scored by the local test server (demo.judge_server,
    which ./scripts/demo starts; here on a free port); the seed writes an answers file."""
    import threading
    from pathlib import Path

    from django.test import Client

    from demo.demo_leaderboard import DEMO_BOARD
    from demo.demo_markup import DEMO_PARTICIPANT
    from demo.judge_server import serve
    from judging.backends import clear_cache
    from submissions.models import State, Submission

    server = serve(0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    demo_settings.DEMO_JUDGE_URL = f"http://127.0.0.1:{server.server_address[1]}/v1"
    clear_cache()
    try:
        out = seed()
        example = Path(demo_settings.DEMO_DIR) / "submission-example.jsonl"
        assert str(example) in out
        # The README's writing walk-through: the supervisor accepts the seeded instruction
        # awaiting the originality verdict (authoring's service). The material grows; version 1
        # of the board does not, so the example file written before stays valid.
        from authoring.models import Slot, SlotState
        from authoring.services import originality_verdict

        before = Instruction.objects.filter(task__isnull=False).count()
        slot = Slot.objects.filter(state=SlotState.ORIGINALITY).first()
        assert slot is not None
        supervisor = User.objects.get(username=DEMO_SUPERVISOR.username)
        originality_verdict(slot=slot, verdict="original", comment="", user=supervisor)
        assert Instruction.objects.filter(task__isnull=False).count() == before + 1
        client = Client()
        client.force_login(User.objects.get(username=DEMO_PARTICIPANT.username))
        assert DEMO_BOARD in client.get(reverse("submissions")).content.decode()
        with example.open("rb") as f, django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                reverse("submission_new", args=[DEMO_BOARD]),
                {
                    "file": f,
                    "model_name": "Demo participant LM",
                    "model_version": "0.1",
                    "parameters": "1B",
                    "inference_settings": '{"temperature": 0, "max_new_tokens": 1024}',
                    "gpus": "none (CPU)",
                    "logs": "demo",
                },
            )
        assert response.status_code == 302, response.content.decode()[:2000]
        submission = Submission.objects.get(model_name="Demo participant LM")
        assert submission.state == State.SCORED, submission.message
        assert submission.version is not None and submission.version.number == 1
        assert submission.answers == submission.version.items.count() == before
        page = client.get(response["Location"]).content.decode()
        from leaderboards.templatetags.leaderboard_scores import score

        # The score as reported, on POLLUX's 0–2 scale (the stored mean is on [0, 1]).
        shown = score(submission.result["mean"])
        assert float(shown) == pytest.approx(2 * submission.result["mean"], abs=1e-3)
        assert "submission-score" in page and shown in page
        # Private: the public board does not show it. It shows the judge-based rows of the demo
        # test server, the seeded submission of the participant's team among them.
        seeded = Submission.objects.get(model_name="Orfograf-LM")
        assert seeded.state == State.PUBLISHED, seeded.message
        source = f"judge:{seeded.judge_config_id}"
        board = Client().get(reverse("leaderboard", args=[DEMO_BOARD]), {"source": source})
        html = board.content.decode()
        assert "Demo participant LM" not in html
        assert "Orfograf-LM" in html and all(m.name in html for m in DEMO_MODELS)
        # The closed test (issue #30 item 8): its inputs are not his to download; he enters
        # with the demo's test server as his endpoint and reads his private score.
        from demo.demo_leaderboard import DEMO_CLOSED_BOARD

        listing = client.get(reverse("submissions")).content.decode()
        assert DEMO_CLOSED_BOARD in listing
        inputs = reverse("submission_inputs", args=[DEMO_CLOSED_BOARD, "jsonl"])
        assert client.get(inputs).status_code == 403
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(
                reverse("submission_new", args=[DEMO_CLOSED_BOARD]),
                {
                    "model_name": "Demo endpoint LM",
                    "model_version": "0.1",
                    "parameters": "1B",
                    "endpoint": demo_settings.DEMO_JUDGE_URL,
                    "endpoint_model": "demo",
                    "api_key": "",
                },
            )
        assert response.status_code == 302, response.content.decode()[:2000]
        closed = Submission.objects.get(model_name="Demo endpoint LM")
        assert closed.state == State.SCORED, closed.message
        assert closed.version is not None and closed.version.closed
        assert closed.result["generation"]["answered"] == closed.version.items.count() == before
        assert "submission-score" in client.get(response["Location"]).content.decode()
        # A second seed adds nothing of this.
        seed()
        assert Submission.objects.count() == 3
    finally:
        server.shutdown()
        server.server_close()
        clear_cache()


@pytest.mark.django_db
def test_the_demo_has_a_writing_campaign_and_generation_configurations(
    demo_settings: Any,
) -> None:
    """Anna writes and reviews for the Editing panel; one instruction went every step up to the
    supervisor's originality verdict; one waits for her review; generation can start at once."""
    from authoring.models import Campaign, Slot, SlotState
    from authoring.selectors import review_queue
    from demo.demo_authoring import DEMO_CAMPAIGN, DEMO_GENERATOR
    from generation.models import GenerationConfig

    out = seed()
    assert DEMO_CAMPAIGN in out
    campaign = Campaign.objects.get(name=DEMO_CAMPAIGN)
    checked = Slot.objects.get(campaign=campaign, state=SlotState.ORIGINALITY)
    assert checked.revisions.count() == 3 and checked.checks.get().checked_at is not None
    anna = Expert.objects.get(user__username=DEMO_EXPERT)
    assert list(review_queue(anna)) == [Slot.objects.get(state=SlotState.SUBMITTED)]
    assert GenerationConfig.objects.filter(name=DEMO_GENERATOR).exists()
    seed()
    assert Campaign.objects.count() == 1 and Slot.objects.count() == 2


@pytest.mark.django_db
def test_the_demo_has_side_by_side_work_to_rank_export_and_measure(demo_settings: Any) -> None:
    """The README's side-by-side pages show content after the seed: rankings with battles
    between every demo model, the panel's agreement, the export's pairs table."""
    import tempfile
    from pathlib import Path

    from comparison.services import latest_ranking
    from dataset.export import ExportOptions, dataset_export
    from demo.demo_pairs import DEMO_PAIRS_PANEL

    seed()
    ranking = latest_ranking()
    assert ranking is not None and ranking.result["n_battles"] > 0
    assert ranking.result["n_models"] == len(DEMO_MODELS)
    admin = Client()
    admin.force_login(User.objects.get(username=DEMO_ADMIN.username))
    page = admin.get(reverse("comparison_rankings"), HTTP_ACCEPT_LANGUAGE="en").content.decode()
    assert f"{ranking.result['n_battles']} battles between {len(DEMO_MODELS)} models" in page
    assert all(m.name in page for m in DEMO_MODELS)
    supervisor = Client()
    supervisor.force_login(User.objects.get(username=DEMO_SUPERVISOR.username))
    panel = Panel.objects.get(key=DEMO_PAIRS_PANEL)
    console = supervisor.get(reverse("console_panel", args=[panel.pk])).content.decode()
    assert 'id="pair-agreement"' in console
    alphas = re.findall(r'<tr data-criterion="[^"]+"><td>[^<]*</td><td>(\d+)</td>', console)
    assert alphas and all(int(items) >= 10 for items in alphas), alphas
    with tempfile.TemporaryDirectory() as tmp:
        result = dataset_export(Path(tmp) / "d.zip", ExportOptions(fmt="parquet"))
    assert result["rows"]["pairs"] >= 10
    # A second seed labels nothing again and keeps the ranking.
    assert "0 past pairs labelled" in seed()
    assert latest_ranking() == ranking
