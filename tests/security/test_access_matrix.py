"""Access matrix: every URL and API operation, requested by every persona, on A's and B's objects.

How it works
------------
`url_routes()` walks the live root URLconf and `api_operations()` reads the OpenAPI schema, so a
view added anywhere is found here. Each route must have a row in ACCESS (the Django admin is
checked as a whole by `test_the_admin_site_is_for_staff_only`); a route without one FAILS, and
the failure prints the outcomes it observed, in the table's own syntax, ready to review and paste.

Each row names how to build the URL's arguments for the objects of panel A and of panel B
(`kwargs`), the body a POST sends (`data`, a real payload for the owner's objects, so that a
refusal is refused for the right reason and not because the form was empty; `json=True` sends
it as JSON), and for each HTTP method the outcome expected for the ten personas, in this order:
anonymous, expert of A, expert of B, supervisor of A, supervisor of B, admin, expert of A and B,
supervisor of A who is an expert of A, expert of A who supervises B, a second supervisor of A.
An outcome is an HTTP status, LOGIN (a redirect to the login page) or REDIRECT (any other
redirect); a pair `(on A, on B)` when it depends on whose object it is.

Adding a row for a new view (the integrator's job when a view lands after this file)::

    "judging_run": Row(RUN, GET=e(LOGIN, 403, 403, 404, 404, 200, 403, 403, 403, 404)),

where RUN is a kwargs builder `lambda w, s: {"pk": ...}` taking the World (tests/security/
conftest.py; add the object to `Side` or `World` there) and the Side of the owner (w.a or w.b),
or None for a URL without arguments. Run the test, read the observed row it prints, and declare
what SHOULD happen: an observed outcome that is wrong is a bug to report, not a row to paste.

Personas outside the ten columns walk every route in tests of their own: a participant
(`test_a_participant_reaches_only_his_runs_and_public_pages`) and a participant revoked or not
approved yet (`test_a_revoked_or_unapproved_participant_reaches_only_public_pages`: public pages
only). Where a route is open to a persona but what it may touch is narrower than the URL's
object, a test walks that too: an exam of his panel takes only answers his panel scores
(`test_an_exam_takes_only_answers_its_panel_scores`), and the markup pages show a supervisor his
panels' submitted markups only (`test_the_markup_pages_show_a_supervisor_his_panels_markups_only`).

Every request is made inside a savepoint that is rolled back, so a POST by one persona does not
change what the next one sees. Every response an expert receives is searched for the secrets of
the blind protocol (the model's identity, another expert's rationale, exam reference comments).
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.signals import got_request_exception
from django.db import transaction
from django.test import Client
from django.urls import resolve, reverse

from quality.control import control_reference_criteria
from tests.conftest import make_user, rubric_of
from tests.security.conftest import GOOD, SECRETS, Side, World
from tests.security.urlwalk import Route, api_operations, url_routes
from work.models import Estimate, Triple

# The module's tests share one world (world_once; building it is the slow part) and stay in xdist
# groups of this module, so a worker builds it at most once per group.
pytestmark = [pytest.mark.django_db, pytest.mark.xdist_group("matrix")]


@pytest.fixture
def world(world_once: World, db: None) -> World:
    """Every test of this module reads the module's one world, in a savepoint of its own."""
    return world_once


LOGIN = "LOGIN"
REDIRECT = "REDIRECT"
Outcome = int | str
Cell = Outcome | tuple[Outcome, Outcome]
PERSONAS = (
    "anon",
    "expert_a",
    "expert_b",
    "sup_a",
    "sup_b",
    "admin",
    "expert_ab",
    "sup_a_expert_a",
    "sup_b_expert_a",
    "sup_a2",
)
# Whose objects each expert persona must see blind (every secret searched for): all of them,
# except the objects of a panel the persona supervises (its exam references are his to write).
BLIND = {
    "expert_a": ("A", "B"),
    "expert_b": ("A", "B"),
    "expert_ab": ("A", "B"),
    "sup_a_expert_a": ("B",),
    "sup_b_expert_a": ("A",),
}
Kwargs = Callable[[World, Side], dict[str, Any]]
Data = Callable[[World, Side], dict[str, Any]]


def e(
    anon: Cell,
    expert_a: Cell,
    expert_b: Cell,
    sup_a: Cell,
    sup_b: Cell,
    admin: Cell,
    expert_ab: Cell,
    sup_a_expert_a: Cell,
    sup_b_expert_a: Cell,
    sup_a2: Cell,
) -> dict[str, Cell]:
    """Expected outcomes, in PERSONAS order."""
    plain = (anon, expert_a, expert_b, sup_a, sup_b, admin)
    combined = (expert_ab, sup_a_expert_a, sup_b_expert_a, sup_a2)
    return dict(zip(PERSONAS, plain + combined, strict=True))


@dataclass(frozen=True)
class Row:
    kwargs: Kwargs | None
    data: Data | None = None
    json: bool = False
    methods: dict[str, dict[str, Cell]] = field(default_factory=dict)

    def __init__(
        self,
        kwargs: Kwargs | None,
        data: Data | None = None,
        json: bool = False,
        **methods: dict[str, Cell],
    ) -> None:
        object.__setattr__(self, "kwargs", kwargs)
        object.__setattr__(self, "data", data)
        object.__setattr__(self, "json", json)
        object.__setattr__(self, "methods", methods)


# Builders of URL arguments for the objects of one side.
PANEL: Kwargs = lambda w, s: {"pk": s.panel.pk}  # noqa: E731
CONTROL_ANSWER: Kwargs = lambda w, s: {"pk": s.panel.pk, "answer_id": s.answer.pk}  # noqa: E731
PANEL_PICK: Kwargs = lambda w, s: {"pk": s.panel.pk, "what": "answers"}  # noqa: E731
PANEL_EXPERT: Kwargs = lambda w, s: {"pk": s.panel.pk, "expert_id": s.expert.pk}  # noqa: E731
ASSIGNMENT: Kwargs = lambda w, s: {"pk": s.assignment.pk}  # noqa: E731
FLAG: Kwargs = lambda w, s: {"pk": s.panel.pk, "flag_id": s.flag.pk}  # noqa: E731
PAIR_ASSIGNMENT: Kwargs = lambda w, s: {"pk": s.pair_assignment.pk}  # noqa: E731
REPA_KEYS = (
    "request_following", "factuality", "repetition", "code_switching", "relevance",
    "harmfulness", "fluency", "contradiction", "sudden_interruption", "refusal", "overall",
)  # fmt: skip
PAIR_LABELS: Data = lambda w, s: {  # noqa: E731
    **{f"label_{key}": "both_good" for key in REPA_KEYS},
    "time_total": "1000",
    "comment": "",
}
PAIR_DRAFT: Data = lambda w, s: {"criterion": "overall", "label": "a"}  # noqa: E731
BUILD_JOB: Kwargs = lambda w, s: {"job_id": s.job.pk}  # noqa: E731
EXAM: Kwargs = lambda w, s: {"pk": s.exam.pk}  # noqa: E731
EXAM_ITEM: Kwargs = lambda w, s: {"pk": s.exam.pk, "answer_id": s.exam_item.answer_id}  # noqa: E731
ATTEMPT: Kwargs = lambda w, s: {"pk": s.attempt.pk}  # noqa: E731
ATTEMPT_ITEM: Kwargs = lambda w, s: {  # noqa: E731
    "pk": s.attempt.pk,
    "assignment_id": s.attempt.items.values_list("assignment_id", flat=True).first(),
}
JUDGE_RUN: Kwargs = lambda w, s: {"pk": s.judge_run.pk}  # noqa: E731
# Admin-only objects belong to no panel: the same object is requested for both sides.
IMPORT_JOB: Kwargs = lambda w, s: {"pk": w.import_job.pk}  # type: ignore[union-attr]  # noqa: E731
MARKUP_TEXT: Kwargs = lambda w, s: {"pk": s.markup_text.pk}  # noqa: E731
MARKUP_WORK: Kwargs = lambda w, s: {"pk": s.markup_work.pk}  # noqa: E731
MARKUP_RUN: Kwargs = lambda w, s: {"pk": s.markup_run.pk}  # noqa: E731
BOARD: Kwargs = lambda w, s: {"slug": w.leaderboard.slug}  # noqa: E731
SUBMIT_BOARD: Kwargs = lambda w, s: {"slug": w.submission_board.slug}  # noqa: E731
SUBMISSION: Kwargs = lambda w, s: {"pk": s.submission.pk}  # noqa: E731
CAMPAIGN: Kwargs = lambda w, s: {"pk": w.campaign.pk}  # noqa: E731
CAMPAIGN_EXPORT: Kwargs = lambda w, s: {"pk": w.campaign.pk, "fmt": "jsonl"}  # noqa: E731
SLOT: Kwargs = lambda w, s: {"pk": s.slot.pk}  # noqa: E731
SLOT_DIFF: Kwargs = lambda w, s: {"pk": s.slot.pk, "number": 1}  # noqa: E731
BASELINE: Kwargs = lambda w, s: {"pk": s.baseline.pk}  # noqa: E731
GENERATION_RUN: Kwargs = lambda w, s: {"pk": w.generation_run.pk}  # noqa: E731


def _markup_upload(key: int) -> dict[str, Any]:
    """The markup import form with one valid contest JSON file (a text of its own per side)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from protocol.markup_format import MarkupDocument, default_meta
    from protocol.markup_json import write_json
    from protocol.spans import Fragment

    meta = {**default_meta(), "uuid": f"matrix-{key}", "subject": "rus", "expert": "E1"}
    text = "Мы одеваем шапки."
    document = MarkupDocument(text, [Fragment(start=3, end=10, code="Р.знач")], meta)
    upload = SimpleUploadedFile(f"matrix-{key}.json", write_json(document).encode())
    return {
        "markup_files": upload,  # one file (the walk rewinds an upload for each persona)
        "source": "expert",
        "author": "",
        "classifier": "prochtenie:2020",
    }


NO_PARTICIPANT = e(403, 403, 403, 403, 403, 403, 403, 403, 403, 403)
EXPORT_JOB: Kwargs = lambda w, s: {"pk": w.export_job.pk}  # type: ignore[union-attr]  # noqa: E731
PAIR_JOB: Kwargs = lambda w, s: {"pk": w.pair_job.pk}  # type: ignore[union-attr]  # noqa: E731


# Real POST bodies, built for the owner's objects.
def _scores(w: World, s: Side) -> list[dict[str, Any]]:
    return [
        {
            "triple_id": est.triple_id,
            "score": 0 if est.triple.group == "critical" else max(rubric_of(est.triple).values),
            "rationale": GOOD,
        }
        for est in s.assignment.estimates.select_related("triple__rubric")
    ]


def SCORES(w: World, s: Side) -> dict[str, Any]:
    form: dict[str, Any] = {"submission_key": f"matrix-{s.assignment.pk}"}
    for item in _scores(w, s):
        form[f"score_{item['triple_id']}"] = str(item["score"])
        form[f"rationale_{item['triple_id']}"] = item["rationale"]
    return form


def DRAFT(w: World, s: Side) -> dict[str, Any]:
    item = _scores(w, s)[0]
    tid = item["triple_id"]
    return {"triple": tid, f"score_{tid}": str(item["score"]), f"rationale_{tid}": GOOD}


def API_SUBMIT(w: World, s: Side) -> dict[str, Any]:
    return {"items": _scores(w, s), "submission_key": f"matrix-api-{s.assignment.pk}"}


def API_DRAFT(w: World, s: Side) -> dict[str, Any]:
    return _scores(w, s)[0]


def NOTE(w: World, s: Side) -> dict[str, Any]:
    return {"note": "Заметка супервизора"}


def LOCK(w: World, s: Side) -> dict[str, Any]:
    return {"submitted_from": "2020-01-01", "submitted_to": "2100-01-01"}


def REOPEN(w: World, s: Side) -> dict[str, Any]:
    triple = Triple.objects.filter(answer=s.answer, panel=s.panel).exclude(group="critical")
    first = triple.first()
    assert first is not None
    return {"triple": first.pk, "note": "Оценки расходятся"}


def _peer_estimate(w: World, s: Side) -> dict[str, Any]:
    """A peer's submitted rubric estimate of the side's answer (the one a supervisor reviews)."""
    estimate = (
        Estimate.objects.filter(
            triple__answer=s.answer, assignment__panel=s.panel, status="submitted"
        )
        .exclude(triple__group="critical")
        .order_by("id")
        .first()
    )
    assert estimate is not None
    return {"pk": s.panel.pk, "estimate_id": estimate.pk}


REVIEW_ANSWER: Kwargs = lambda w, s: {"pk": s.panel.pk, "answer_id": s.answer.pk}  # noqa: E731
PEER_ESTIMATE: Kwargs = _peer_estimate


def _panel_triple(w: World, s: Side) -> dict[str, Any]:
    triple = Triple.objects.filter(answer=s.answer, panel=s.panel).exclude(group="critical").first()
    assert triple is not None
    return {"pk": s.panel.pk, "triple_id": triple.pk}


PANEL_TRIPLE: Kwargs = _panel_triple


def VERDICT(w: World, s: Side) -> dict[str, Any]:
    triple = Triple.objects.get(pk=_panel_triple(w, s)["triple_id"])
    return {"score": str(max(rubric_of(triple).values)), "reason": "Решение супервизора."}


def RETURN(w: World, s: Side) -> dict[str, Any]:
    return {"comment": "Проверьте обоснование ещё раз."}


def BULK_REVIEW(w: World, s: Side) -> dict[str, Any]:
    """The data browser's bulk form: send the side's peer's submitted work to review."""
    estimate = Estimate.objects.get(pk=_peer_estimate(w, s)["estimate_id"])
    return {"action": "review", "ids": [str(estimate.assignment_id)], "back": "kind=assignments"}


def CONTROL_ADD(w: World, s: Side) -> dict[str, Any]:
    return {"action": "add", "answer": str(s.answer.pk)}


def REFERENCES(w: World, s: Side) -> dict[str, Any]:
    form = {}
    for criterion in control_reference_criteria(panel=s.panel, answer=s.answer):
        if criterion.rubric is not None:
            form[f"score_{criterion.pk}"] = str(min(criterion.rubric.values))
            form[f"comment_{criterion.pk}"] = "Эталон"
    assert form
    return form


def EXAM_SETTINGS(w: World, s: Side) -> dict[str, Any]:
    return {
        "title": "Экзамен, новая редакция",
        "pass_threshold": "0.8",
        "tolerance": "0",
        "max_attempts": "3",
        "retake_wait_hours": "24",
        "is_active": "on",
    }


def EXAM_ITEM_ADD(w: World, s: Side) -> dict[str, Any]:
    return {"answer": str(s.answer.pk)}


def EXAM_PAIRS_ADD(w: World, s: Side) -> dict[str, Any]:
    return {"n": "1", "seed": "1"}


def EXAM_REFERENCES(w: World, s: Side) -> dict[str, Any]:
    ref = s.exam_item.references.select_related("rubric").get()
    return {
        "answer": str(s.exam_item.answer_id),
        f"score_{ref.criterion_id}": str(max(ref.exam_rubric.values)),
        f"comment_{ref.criterion_id}": "Новый комментарий",
    }


def EXAM_IMPORT(w: World, s: Side) -> dict[str, Any]:
    ref = s.exam_item.references.select_related("criterion").get()
    assert s.exam_item.answer is not None, "the world's exam item is an answer"
    source = s.exam_item.answer.reserved.source_id
    csv = f"answer,criterion,score,comment\n{source},{ref.criterion.key},0,Импорт\n"
    return {"file": SimpleUploadedFile("refs.csv", csv.encode(), content_type="text/csv")}


def PAIRS_FILE(w: World, s: Side) -> dict[str, Any]:
    csv = (
        "query,query_category,model_name_1,model_name_2,model_output_1,model_output_2\n"
        "Вопрос для пар,Факты,Модель-1,Модель-2,Ответ один,Ответ два\n"
    )
    return {"file": SimpleUploadedFile("pairs.csv", csv.encode(), content_type="text/csv")}


def PAIRS_MAKE(w: World, s: Side) -> dict[str, Any]:
    return {"scheme": "random", "seed": "7"}


GUIDELINE: Kwargs = lambda w, s: {"pk": s.panel.pk, "guideline_id": s.guideline.pk}  # noqa: E731


def _old_guideline_version(w: World, s: Side) -> dict[str, Any]:
    return {"pk": s.panel.pk, "version_id": s.guideline.versions.order_by("number").first().pk}


GUIDELINE_VERSION: Kwargs = _old_guideline_version


def GUIDELINE_EDIT(w: World, s: Side) -> dict[str, Any]:
    return {
        "body": "Новая редакция руководства панели.",
        "hard_cases": "Если ответ обрывается, оценивайте то, что есть.",
        "change_note": "уточнение",
        "ex-TOTAL_FORMS": "1",
        "ex-INITIAL_FORMS": "0",
        "ex-0-kind": "bad",
        "ex-0-text": "Плохой пример.",
        "ex-0-explanation": "Не отвечает на вопрос.",
        "ex-0-score": "0",
    }


def COMMENT(w: World, s: Side) -> dict[str, Any]:
    return {"body": "Вопрос о критерии 3: как оценивать неполный ответ?"}


def _thread(w: World, s: Side) -> dict[str, Any]:
    """The thread on the side's assignment, opened by its expert's question."""
    from discussion.services import comment_post

    comment = comment_post(item=s.assignment, user=s.expert.user, body="Вопрос эксперта")
    return {"pk": comment.thread_id}


THREAD: Kwargs = _thread


def OVERRIDE(w: World, s: Side) -> dict[str, Any]:
    return {"passed": "1", "reason": "Проверено вручную"}


ACCESS: dict[str, Row] = {
    # Anonymous visitors go to the login page; everyone else to where their work is.
    "home": Row(
        None,
        GET=e(
            LOGIN,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
        ),
        POST=e(
            LOGIN,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
        ),
    ),
    "healthz": Row(
        None,
        GET=e(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "login": Row(
        None,
        GET=e(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
    ),
    "favicon": Row(
        None,
        GET=e(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "logout": Row(
        None,
        GET=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN, LOGIN),
    ),
    "set_language": Row(
        None,
        GET=e(
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
        ),
        POST=e(
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
        ),
    ),
    # The schema and its docs describe the API, they hold no data: public on purpose.
    "api-schema": Row(
        None,
        GET=e(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "api-docs": Row(
        None,
        GET=e(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # --- the expert's pages: only experts (whatever else they are); another expert's assignment
    # does not exist (404). The owner's real scores are saved (a redirect to the next answer).
    "queue": Row(
        None,
        GET=e(LOGIN, 200, 200, 403, 403, 403, 200, 200, 200, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "queue_next": Row(
        None,
        GET=e(LOGIN, REDIRECT, REDIRECT, 403, 403, 403, REDIRECT, REDIRECT, REDIRECT, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "assignment": Row(
        ASSIGNMENT,
        data=SCORES,
        GET=e(LOGIN, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
        POST=e(LOGIN, (REDIRECT, 404), (404, REDIRECT), 403, 403, 403, 404, 404, 404, 403),
    ),
    "assignment_draft": Row(
        ASSIGNMENT,
        data=DRAFT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
    ),
    # --- skip / flag as broken: the owner's open assignment only.
    "assignment_flag": Row(
        ASSIGNMENT,
        data=lambda w, s: {"kind": "skip", "reason": "wrong_task", "comment": "не та задача"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (REDIRECT, 404), (404, REDIRECT), 403, 403, 403, 404, 404, 404, 403),
    ),
    # --- side by side (REPA): the owner's pair only; another expert's does not exist (404).
    "compare_submit": Row(
        PAIR_ASSIGNMENT,
        data=PAIR_LABELS,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (REDIRECT, 404), (404, REDIRECT), 403, 403, 403, 404, 404, 404, 403),
    ),
    "compare_draft": Row(
        PAIR_ASSIGNMENT,
        data=PAIR_DRAFT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
    ),
    "compare_refuse": Row(
        PAIR_ASSIGNMENT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (REDIRECT, 404), (404, REDIRECT), 403, 403, 403, 404, 404, 404, 403),
    ),
    # --- the expert API: DRF answers 403 to anonymous requests (session auth sends no challenge).
    "api-assignment-list": Row(
        None,
        GET=e(403, 200, 200, 403, 403, 403, 200, 200, 200, 403),
        POST=e(403, 405, 405, 403, 403, 403, 405, 405, 405, 403),
    ),
    "api-assignment-detail": Row(
        ASSIGNMENT,
        GET=e(403, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
        POST=e(403, 405, 405, 403, 403, 403, 405, 405, 405, 403),
    ),
    "api-assignment-draft": Row(
        ASSIGNMENT,
        data=API_DRAFT,
        json=True,
        GET=e(403, 405, 405, 403, 403, 403, 405, 405, 405, 403),
        # A real JSON body of the owner's scores: saved for the owner (200), and another
        # expert's assignment does not exist (404) whatever the body.
        POST=e(403, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
    ),
    "api-assignment-submit": Row(
        ASSIGNMENT,
        data=API_SUBMIT,
        json=True,
        GET=e(403, 405, 405, 403, 403, 403, 405, 405, 405, 403),
        # A real JSON body of the owner's scores: saved for the owner (200), and another
        # expert's assignment does not exist (404) whatever the body.
        POST=e(403, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
    ),
    # --- admin-only pages: import and the dataset (aggregation, export, downloads).
    "import_material": Row(
        None,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
    ),
    "import_job": Row(
        IMPORT_JOB,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
    ),
    # Answer pairs (import of a file, pairing): admins; the upload and the pairing are POSTs.
    "material_pairs": Row(
        None,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "material_pairs_import": Row(
        None,
        data=PAIRS_FILE,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "material_pairs_make": Row(
        None,
        data=PAIRS_MAKE,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "material_pairs_job": Row(
        PAIR_JOB,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "dataset": Row(
        None,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, 400, 403, 403, 403, 403),
    ),
    "dataset-job": Row(
        EXPORT_JOB,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
    ),
    "dataset-download": Row(
        EXPORT_JOB,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
    ),
    # --- the console: supervisors and admins; another panel does not exist (404). Supervising
    # one panel opens nothing of another, being an expert too opens nothing more; a second
    # supervisor of a panel has what the first has.
    "console": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 200, 200, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # The data browser: every console user, each seeing his own panels' rows (the rows are
    # tested in tests/console/test_browser_pages.py).
    "console_browser": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 200, 200, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Bulk actions on the browser's selection: every selected row must be of a panel the user
    # supervises (another panel's row: 404, nothing changes; tests/console/test_bulk.py).
    "console_bulk": Row(
        None,
        data=BULK_REVIEW,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_pick": Row(
        PANEL_PICK,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_panel": Row(
        PANEL,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_experts": Row(
        PANEL,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_flags": Row(
        PANEL,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # The review queues: the panel's supervisors and admins; another panel's supervisor (an
    # expert of A who supervises B included) finds no such panel, as on every console page.
    "console_review_queues": Row(
        PANEL,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_flag_resolve": Row(
        FLAG,
        data=lambda w, s: {"resolution": "ignored", "note": "проверено"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_plots": Row(
        PANEL,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_estimates": Row(
        PANEL,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_answer_review": Row(
        REVIEW_ANSWER,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_estimate_return": Row(
        PEER_ESTIMATE,
        data=RETURN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_triple_adjudicate": Row(
        PANEL_TRIPLE,
        data=VERDICT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_estimate_accept": Row(
        PEER_ESTIMATE,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_expert_pause": Row(
        PANEL_EXPERT,
        data=NOTE,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_expert_resume": Row(
        PANEL_EXPERT,
        data=NOTE,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_expert_reassign": Row(
        PANEL_EXPERT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_lock": Row(
        PANEL,
        data=LOCK,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_reopen": Row(
        PANEL,
        data=REOPEN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_build": Row(
        PANEL,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_route_pairs": Row(
        PANEL,
        data=lambda w, s: {"overlap": "3"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_notices_read": Row(
        PANEL,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_control": Row(
        PANEL,
        data=CONTROL_ADD,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    # No gold pool in this world: an allowed persona is sent back to the control page with the
    # reason.
    "console_control_pairs_add": Row(
        PANEL,
        data=EXAM_PAIRS_ADD,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_control_references": Row(
        CONTROL_ANSWER,
        data=REFERENCES,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_exams": Row(
        PANEL,
        data=EXAM_SETTINGS,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_job": Row(
        BUILD_JOB,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_exam": Row(
        EXAM,
        data=EXAM_SETTINGS,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    # Another panel's answer into one's exam: test_an_exam_takes_only_answers_its_panel_scores.
    "console_exam_item_add": Row(
        EXAM,
        data=EXAM_ITEM_ADD,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    # No gold pool in this world: an allowed persona is sent back to the exam with the reason.
    "console_exam_pairs_add": Row(
        EXAM,
        data=EXAM_PAIRS_ADD,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_exam_item_remove": Row(
        EXAM_ITEM,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    # The owner's references are saved (then the exam page); access is checked before the
    # body is read (tests/quality/test_exams.py covers the supervisor of B).
    "console_exam_references": Row(
        EXAM,
        data=EXAM_REFERENCES,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_exam_import": Row(
        EXAM,
        data=EXAM_IMPORT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "console_attempt": Row(
        ATTEMPT,
        data=OVERRIDE,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
    ),
    # --- the candidate's side of exams: only experts; another candidate's attempt is a 404.
    # --- judge runs: admins and supervisors who are not experts; a run of another panel is 404.
    "judging_runs": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
    ),
    "judging_start": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
    ),
    "judging_run": Row(
        JUDGE_RUN,
        GET=e(LOGIN, 404, 404, (200, 404), (404, 200), 200, 404, 404, 404, (200, 404)),
        POST=e(LOGIN, 404, 404, (200, 404), (404, 200), 200, 404, 404, 404, (200, 404)),
    ),
    "judging_cancel": Row(
        JUDGE_RUN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            404,
            404,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            404,
            404,
            404,
            (REDIRECT, 404),
        ),
    ),
    "judging_resume": Row(
        JUDGE_RUN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            404,
            404,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            404,
            404,
            404,
            (REDIRECT, 404),
        ),
    ),
    # The position-bias twin of a side-by-side run: whoever may manage the run (on a
    # pointwise run it is refused with a message and a redirect, nothing created).
    "judging_swap": Row(
        JUDGE_RUN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            404,
            404,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            404,
            404,
            404,
            (REDIRECT, 404),
        ),
    ),
    # Recomputing the stored report: whoever may see the run (a POST without fields).
    "judging_report_recompute": Row(
        JUDGE_RUN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            404,
            404,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            404,
            404,
            404,
            (REDIRECT, 404),
        ),
    ),
    "judging_contradictions": Row(
        JUDGE_RUN,
        GET=e(LOGIN, 404, 404, (200, 404), (404, 200), 200, 404, 404, 404, (200, 404)),
        POST=e(LOGIN, 404, 404, (200, 404), (404, 200), 200, 404, 404, 404, (200, 404)),
    ),
    # --- model rankings: admins and supervisors who are not experts (they name the models);
    # only admins recompute (an empty POST queues the defaults).
    "comparison_rankings": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "comparison_rankings_recompute": Row(
        None,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    # The downloads follow the page (the agreement inside: only the supervised panels').
    "comparison_rankings_xlsx": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "comparison_rankings_parquet": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # --- span markups: admins and supervisors who are not experts (a markup names its expert
    # and shows his fragments beside another's); a text belongs to the panels assigned to mark
    # it, another panel's text does not exist (404). What each page shows of them:
    # test_the_markup_pages_show_a_supervisor_his_panels_markups_only.
    "markup_texts": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "markup_compare": Row(
        MARKUP_TEXT,
        GET=e(LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, 403, 403, (200, 404)),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # --- leaderboards: the list is open (it lists what each may see); a private board is for
    # admins and supervisors who are not experts; creating, recomputing, publishing: admins.
    "leaderboards": Row(
        None,
        GET=e(200, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "leaderboard_create": Row(
        None,
        data=lambda w, s: {"slug": f"matrix-{s.panel.pk}", "title": "Matrix board"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "leaderboard": Row(
        BOARD,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "leaderboard_model": Row(
        lambda w, s: {"slug": w.leaderboard.slug, "model": w.leaderboard_model},
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "leaderboard_compare": Row(
        BOARD,
        GET=e(LOGIN, 403, 403, 404, 404, 404, 403, 403, 403, 404),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # A board's versions are read as the board is; cutting one is an admin's (the world's board
    # has not changed since its version 1: the admin's real cut finds nothing to cut, 409).
    "leaderboard_versions": Row(
        BOARD,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(405, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "leaderboard_version_cut": Row(
        BOARD,
        data=lambda w, s: {"note": "access matrix"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, 409, 403, 403, 403, 403),
    ),
    "leaderboard_refresh": Row(
        BOARD,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "leaderboard_visibility": Row(
        BOARD,
        # The board stays private (the rows above and below expect it so): a real, idempotent
        # publishing form.
        data=lambda w, s: {"visibility": "private", "reason": "access matrix"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "leaderboard_submission_settings": Row(
        BOARD,
        data=lambda w, s: {
            "accepts_submissions": "",
            "judge_config": "",
            "fixed_settings": '{"temperature": 0}',
            "submissions_per_day": "3",
        },
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    # --- submissions: a participant's own (none of these personas is one:
    # test_a_participant_reaches_only_his_runs_and_public_pages covers him); admins see every
    # submission and decide; supervisors and experts have no part. A's submission is scored,
    # B's awaits a publication decision.
    "submissions": Row(
        None,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "submission_new": Row(
        SUBMIT_BOARD,
        GET=e(LOGIN, 403, 403, 403, 403, 404, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, 404, 403, 403, 403, 403),
    ),
    "submission_inputs": Row(
        lambda w, s: {"slug": w.submission_board.slug, "fmt": "jsonl"},
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "submission": Row(
        SUBMISSION,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "submission_request": Row(
        SUBMISSION,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, 403, 403, 403, 403, 403),
    ),
    "submission_decide": Row(
        SUBMISSION,
        data=lambda w, s: {"decision": "approve", "reason": ""},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, (409, REDIRECT), 403, 403, 403, 403),
    ),
    "submission_rescore": Row(
        SUBMISSION,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, 409, 403, 403, 403, 403),
    ),
    # Cancelling an endpoint submission's generation: its participant or an admin; A's and B's
    # are not being generated (409 for those who may act).
    "submission_cancel": Row(
        SUBMISSION,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, 409, 403, 403, 403, 403),
    ),
    "submission_send": Row(
        SUBMISSION,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    # Registering is for visitors (a logged-in user is sent to his page); approving: admins.
    "participant_register": Row(
        None,
        data=lambda w, s: {
            "username": f"newcomer{s.panel.pk}",
            "email": "newcomer@example.org",
            "organisation": "Newcomers",
            "password1": "a-long-pass-phrase-9",
            "password2": "a-long-pass-phrase-9",
        },
        GET=e(
            200,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
        ),
        POST=e(
            200,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
            REDIRECT,
        ),
    ),
    "participants": Row(
        None,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "participant_approve": Row(
        lambda w, s: {"pk": s.submission.participant_id},
        data=lambda w, s: {"approved": "1"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    # --- markup files in and out: admins only (the export names each markup's author).
    "markup_import": Row(
        None,
        data=lambda w, s: _markup_upload(s.panel.pk),
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "markup_export": Row(
        lambda w, s: {"fmt": "xlsx"},
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # --- span markup work: an expert's own assigned markups; another's does not exist (404),
    # a non-expert has no markup work (403). Assigning is the panel's supervisors' and admins'.
    "markup_work": Row(
        None,
        GET=e(LOGIN, 200, 200, 403, 403, 403, 200, 200, 200, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "markup_work_page": Row(
        MARKUP_WORK,
        GET=e(LOGIN, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "markup_work_draft": Row(
        MARKUP_WORK,
        data=lambda w, s: {"selections": [], "time_ms": 100},
        json=True,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
    ),
    "markup_work_submit": Row(
        MARKUP_WORK,
        data=lambda w, s: {
            "selections": [],
            "time_ms": 100,
            "key": "k",
            "criteria": {f"К{n}": 1 for n in range(1, 13)},
            "rationales": {f"К{n}": "обоснование" for n in range(1, 13)},
        },
        json=True,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (200, 404), (404, 200), 403, 403, 403, 404, 404, 404, 403),
    ),
    "markup_assign": Row(
        None,
        data=lambda w, s: {"panel": s.panel.pk, "overlap": 2},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 403),
            (403, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 403),
            (403, REDIRECT),
            (REDIRECT, 403),
        ),
    ),
    # --- the algorithmic markup contest: the leaderboard (staff who are not experts,
    # participants); a participant's runs and the session API (participants only: none of these
    # personas is one; test_a_participant_reaches_only_his_runs_and_public_pages covers them).
    "markup_leaderboard": Row(
        None,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 403, 403, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "markup_my_runs": Row(
        None,
        GET=e(LOGIN, 403, 403, 403, 403, 403, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "api_markup_samples": Row(None, GET=NO_PARTICIPANT, POST=NO_PARTICIPANT),
    "api_markup_runs": Row(
        None,
        data=lambda w, s: {"sample": s.markup_run.sample_id, "system": "Another"},
        json=True,
        GET=NO_PARTICIPANT,
        POST=NO_PARTICIPANT,
    ),
    "api_markup_run": Row(MARKUP_RUN, GET=NO_PARTICIPANT, POST=NO_PARTICIPANT),
    "api_markup_run_next": Row(MARKUP_RUN, GET=NO_PARTICIPANT, POST=NO_PARTICIPANT),
    "api_markup_run_markup": Row(
        MARKUP_RUN,
        data=lambda w, s: {"text_id": w.markup_text.pk, "selections": []},
        json=True,
        GET=NO_PARTICIPANT,
        POST=NO_PARTICIPANT,
    ),
    "api_markup_run_close": Row(MARKUP_RUN, GET=NO_PARTICIPANT, POST=NO_PARTICIPANT),
    # --- guidelines: a panel's members (exam candidates included), its supervisors and admins
    # read them; another panel's do not exist (404). An expert of A who supervises B reads both.
    "guidelines_panel": Row(
        PANEL,
        GET=e(
            LOGIN,
            (200, 404),
            (404, 200),
            (200, 404),
            (404, 200),
            200,
            200,
            (200, 404),
            200,
            (200, 404),
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Writing them, and their history with authors: the panel's supervisors and admins only.
    "guidelines_manage": Row(
        PANEL,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "guidelines_edit": Row(
        PANEL,
        data=GUIDELINE_EDIT,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "guidelines_history": Row(
        GUIDELINE,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "guidelines_version": Row(
        GUIDELINE_VERSION,
        GET=e(
            LOGIN, 403, 403, (200, 404), (404, 200), 200, 403, (200, 404), (404, 200), (200, 404)
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "my_exams": Row(
        None,
        GET=e(LOGIN, 200, 200, 403, 403, 403, 200, 200, 200, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "exam_start": Row(
        EXAM,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            (REDIRECT, 404),
            (404, REDIRECT),
            403,
            403,
            403,
            REDIRECT,
            (REDIRECT, 404),
            (REDIRECT, 404),
            403,
        ),
    ),
    "exam_attempt_continue": Row(
        ATTEMPT,
        GET=e(LOGIN, 404, 404, 403, 403, 403, 404, 404, 404, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # The attempt's references: its own expert only (the world's candidate is none of the
    # personas), supervisors read attempts in the console (console_attempt).
    "exam_practice_feedback": Row(
        ATTEMPT_ITEM,
        GET=e(LOGIN, 404, 404, 403, 403, 403, 404, 404, 404, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "exam_attempt_result": Row(
        ATTEMPT,
        GET=e(LOGIN, 404, 404, 403, 403, 403, 404, 404, 404, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "console_stats": Row(
        PANEL,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    # --- authoring (instruction writing): every persona here holds a writing role or
    # supervises; the slot is its expert's, in review; expert_ab reviews both panels,
    # sup_a_expert_a proofreads A's (and supervises A). Writers' pages need the role.
    "authoring_home": Row(
        None,
        GET=e(LOGIN, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "authoring_campaign_create": Row(
        None,
        data=lambda w, s: {"name": "another campaign"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "authoring_dashboard": Row(
        CAMPAIGN,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 200, 200, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "authoring_export": Row(
        CAMPAIGN_EXPORT,
        GET=e(LOGIN, 403, 403, 200, 200, 200, 403, 200, 200, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "authoring_plan": Row(
        CAMPAIGN,
        data=lambda w, s: {f"quota-{s.panel.pk}-{s.take['task']}-easy": "3"},
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    # Taking a slot: an author of that panel only (a refusal by the data is a 403 page).
    "authoring_take": Row(
        CAMPAIGN,
        data=lambda w, s: dict(s.take),
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (REDIRECT, 403), (403, REDIRECT), 404, 404, 404, 403, 403, 403, 404),
    ),
    # The slot: its author, the panel's reviewers (once submitted), its supervisors, admins.
    "authoring_slot": Row(
        SLOT,
        GET=e(
            LOGIN,
            (200, 404),
            (404, 200),
            (200, 404),
            (404, 200),
            200,
            200,
            (200, 404),
            (404, 200),
            (200, 404),
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "authoring_diff": Row(
        SLOT_DIFF,
        GET=e(
            LOGIN,
            (200, 404),
            (404, 200),
            (200, 404),
            (404, 200),
            200,
            200,
            (200, 404),
            (404, 200),
            (200, 404),
        ),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    # Writing is the author's alone, and not while the instruction is in review (409).
    "authoring_save": Row(
        SLOT,
        data=lambda w, s: {"text": "изменено"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (409, 404), (404, 409), 404, 404, 404, 404, 404, 404, 404),
    ),
    "authoring_submit": Row(
        SLOT,
        data=lambda w, s: {"text": "изменено"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (409, 404), (404, 409), 404, 404, 404, 404, 404, 404, 404),
    ),
    "authoring_release": Row(
        SLOT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, (409, 404), (404, 409), 404, 404, 404, 404, 404, 404, 404),
    ),
    # Review: the panel's reviewers, never the author.
    "authoring_review": Row(
        SLOT,
        data=lambda w, s: {"verdict": "accept"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 404, 404, 404, 404, 404, REDIRECT, 404, 404, 404),
    ),
    # Editorial step and originality: editors, the panel's supervisors and admins — and only
    # in their state (the slot is in review: 409).
    "authoring_edit": Row(
        SLOT,
        data=lambda w, s: {"text": "правка"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            404,
            404,
            (409, 404),
            (404, 409),
            409,
            404,
            (409, 404),
            (404, 409),
            (409, 404),
        ),
    ),
    "authoring_recheck": Row(
        SLOT,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            404,
            404,
            (409, 404),
            (404, 409),
            409,
            404,
            (409, 404),
            (404, 409),
            (409, 404),
        ),
    ),
    "authoring_originality": Row(
        SLOT,
        data=lambda w, s: {"verdict": "original"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            404,
            404,
            (409, 404),
            (404, 409),
            409,
            404,
            (409, 404),
            (404, 409),
            (409, 404),
        ),
    ),
    "authoring_corpora": Row(
        None,
        data=lambda w, s: {
            "name": "corpus",
            "file": SimpleUploadedFile("c.jsonl", b'{"text": "some reference text"}\n'),
        },
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    # A human-baseline answer: its writer's alone.
    "authoring_baseline": Row(
        BASELINE,
        data=lambda w, s: {"text": "мой ответ", "save": "1"},
        GET=e(LOGIN, (200, 404), (404, 200), 404, 404, 404, 404, 404, 404, 404),
        POST=e(LOGIN, (REDIRECT, 404), (404, REDIRECT), 404, 404, 404, 404, 404, 404, 404),
    ),
    "authoring_baseline_sample": Row(
        PANEL,
        data=lambda w, s: {"size": "1"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    # --- answer generation: admins only (configurations name the models).
    "generation_runs": Row(
        None,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "generation_config_create": Row(
        None,
        data=lambda w, s: {
            "name": "g",
            "model_name": "M",
            "backend": "openai",
            "endpoint": "http://127.0.0.1:9/v1",
        },
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "generation_run_create": Row(
        None,
        data=lambda w, s: {"config": str(w.generation_config.pk), "all": "1", "limit": "1"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "generation_run": Row(
        GENERATION_RUN,
        GET=e(LOGIN, 403, 403, 403, 403, 200, 403, 403, 403, 403),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "generation_run_cancel": Row(
        GENERATION_RUN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    "generation_run_resume": Row(
        GENERATION_RUN,
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(LOGIN, 403, 403, 403, 403, REDIRECT, 403, 403, 403, 403),
    ),
    # --- comments on an item (discussion): the item's expert, his panel's supervisors (blind to
    # none of it: the combined personas' own work is on the shared answer) and admins; another
    # expert's item does not exist (404). Markups: supervisors who are experts see none.
    "discussion_threads": Row(
        None,
        GET=e(LOGIN, 200, 200, 200, 200, 200, 200, 200, 200, 200),
        POST=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
    ),
    "discussion_assignment": Row(
        ASSIGNMENT,
        data=COMMENT,
        GET=e(
            LOGIN,
            (200, 404),
            (404, 200),
            (200, 404),
            (404, 200),
            200,
            404,
            (200, 404),
            (404, 200),
            (200, 404),
        ),
        POST=e(
            LOGIN,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            404,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
    "discussion_markup": Row(
        MARKUP_WORK,
        data=COMMENT,
        GET=e(
            LOGIN, (200, 404), (404, 200), (200, 404), (404, 200), 200, 404, 404, 404, (200, 404)
        ),
        POST=e(
            LOGIN,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            404,
            404,
            404,
            (REDIRECT, 404),
        ),
    ),
    # Resolving: supervisors and admins; an expert (of no supervised panel) has no such role.
    "discussion_resolve": Row(
        THREAD,
        data=lambda w, s: {"resolved": "1"},
        GET=e(LOGIN, 405, 405, 405, 405, 405, 405, 405, 405, 405),
        POST=e(
            LOGIN,
            403,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            REDIRECT,
            403,
            (REDIRECT, 404),
            (404, REDIRECT),
            (REDIRECT, 404),
        ),
    ),
}


# --------------------------------------------------------------------------------------------


def _outcome(response: Any) -> Outcome:
    if response.status_code in (301, 302, 303):
        location = response["Location"]
        if location.startswith(reverse("login")) or location.startswith(reverse("admin:login")):
            return LOGIN
        return REDIRECT
    return int(response.status_code)


def _clients(world: World) -> dict[str, Client]:
    clients = {}
    for persona in PERSONAS:
        client = Client(raise_request_exception=False)
        user = world.users[persona]
        if user is not None:
            client.force_login(user)
        clients[persona] = client
    return clients


CRASHES: list[str] = []


def _record_crash(sender: Any, request: Any = None, **kwargs: Any) -> None:
    CRASHES.append(f"{request.method} {request.path}:\n{traceback.format_exc(limit=-6)}")


def _request(
    client: Client,
    method: str,
    url: str,
    data: dict[str, Any] | None = None,
    as_json: bool = False,
) -> Any:
    # A savepoint per request: whatever a POST changes is undone before the next persona.
    got_request_exception.connect(_record_crash)
    try:
        with transaction.atomic():
            if method == "POST" and data is not None:
                for value in data.values():
                    if hasattr(value, "seek"):
                        value.seek(0)  # an upload is read again by the next persona
                if as_json:
                    response = client.post(url, json.dumps(data), content_type="application/json")
                else:
                    response = client.post(url, data)
            else:
                response = getattr(client, method.lower())(url)
            content = b"" if response.streaming else response.content
            transaction.set_rollback(True)
    finally:
        got_request_exception.disconnect(_record_crash)
    return response, content


def _observe(
    world: World, route: Route, row: Row | None, methods: list[str]
) -> dict[str, dict[str, tuple[Outcome, Outcome]]]:
    """Outcome per method and persona, on A's object and on B's."""
    clients = _clients(world)
    row_kwargs = row.kwargs if row is not None else _guess_kwargs(route)
    urls = {}
    bodies: dict[str, dict[str, Any] | None] = {}
    for owner, side in (("A", world.a), ("B", world.b)):
        kwargs = row_kwargs(world, side) if row_kwargs else {}
        urls[owner] = reverse(route.key, kwargs=kwargs) if kwargs else reverse(route.key)
        bodies[owner] = row.data(world, side) if row is not None and row.data else None
    as_json = bool(row is not None and row.json)
    seen: dict[str, dict[str, tuple[Outcome, Outcome]]] = {}
    leaks: list[str] = []
    for method in methods:
        seen[method] = {}
        for persona in PERSONAS:
            pair = []
            for owner in ("A", "B"):
                response, content = _request(
                    clients[persona], method, urls[owner], bodies[owner], as_json
                )
                pair.append(_outcome(response))
                if owner in BLIND.get(persona, ()):
                    text = content.decode(errors="replace")
                    leaks += [
                        f"{method} {urls[owner]} as {persona}: {s!r}" for s in SECRETS if s in text
                    ]
            seen[method][persona] = (pair[0], pair[1])
    assert not leaks, "blind protocol broken:\n" + "\n".join(leaks)
    return seen


def _cell(pair: tuple[Outcome, Outcome]) -> str:
    return repr(pair[0]) if pair[0] == pair[1] else repr(pair)


def _as_row(route: Route, seen: dict[str, dict[str, tuple[Outcome, Outcome]]]) -> str:
    def fmt(c: str) -> str:
        return c.replace("'LOGIN'", "LOGIN").replace("'REDIRECT'", "REDIRECT")

    methods = ", ".join(
        f"{m}=e({', '.join(fmt(_cell(seen[m][p])) for p in PERSONAS)})" for m in seen
    )
    return f'    "{route.key}": Row(KWARGS, {methods}),'


def _expected(cell: Cell) -> tuple[Outcome, Outcome]:
    return cell if isinstance(cell, tuple) else (cell, cell)


ROUTES = [r for r in url_routes() if not r.route.startswith("admin/")]


def _matrix_params() -> list[Any]:
    # Two xdist groups: each is run by one worker, which builds the world once for it.
    return [
        pytest.param(route, id=route.key, marks=pytest.mark.xdist_group(f"matrix-{i % 2}"))
        for i, route in enumerate(ROUTES)
    ]


@pytest.mark.parametrize("route", _matrix_params())
def test_every_route_answers_each_persona_as_declared(world: World, route: Route) -> None:
    """Each route, each persona, on A's object and on B's; every mismatch is reported."""
    problems = []
    CRASHES.clear()
    row = ACCESS.get(route.key)
    if row is None:
        seen = _observe(world, route, None, ["GET", "POST"])
        problems.append(
            f"{route.key} ({route.route}) has no row in ACCESS; observed, to review:\n"
            + _as_row(route, seen)
        )
    else:
        seen = _observe(world, route, row, list(row.methods))
        for method, expected in row.methods.items():
            for persona in PERSONAS:
                want = _expected(expected[persona])
                if seen[method][persona] != want:
                    problems.append(
                        f"{route.key}: {method} as {persona}: expected {want}, "
                        f"got {seen[method][persona]}; observed row:\n{_as_row(route, seen)}"
                    )
    problems += [f"crash: {c}" for c in CRASHES[:2]]
    assert not problems, "\n\n".join(problems)


# A participant (participant_a: A's run is his, B's another participant's) on the routes a
# participant has any business with; on every other route he must be refused (403, 404 or 405).
PARTICIPANT: dict[str, dict[str, Cell]] = {
    "home": {"GET": REDIRECT, "POST": REDIRECT},
    "healthz": {"GET": 200, "POST": 405},
    "login": {"GET": 200, "POST": 200},
    "favicon": {"GET": 200, "POST": 405},
    "logout": {"GET": 405, "POST": LOGIN},
    "set_language": {"GET": REDIRECT, "POST": REDIRECT},
    "api-schema": {"GET": 200, "POST": 405},
    "api-docs": {"GET": 200, "POST": 405},
    "markup_leaderboard": {"GET": 200, "POST": 405},
    "markup_my_runs": {"GET": 200, "POST": 405},
    "api_markup_samples": {"GET": 200, "POST": 405},
    # His run on the sample is open: a second one is refused (409), on either side's sample.
    "api_markup_runs": {"GET": 200, "POST": 409},
    "api_markup_run": {"GET": (200, 404), "POST": 405},
    "api_markup_run_next": {"GET": 405, "POST": (200, 404)},
    "api_markup_run_markup": {"GET": 405, "POST": (200, 404)},
    "api_markup_run_close": {"GET": 405, "POST": (200, 404)},
    # The list lists nothing he may not open; the world's board is private.
    "leaderboards": {"GET": 200, "POST": 405},
    "leaderboard": {"GET": 403, "POST": 405},
    "leaderboard_model": {"GET": 403, "POST": 405},
    "leaderboard_compare": {"GET": 403, "POST": 405},
    # His page, his own submission (A's; B's is another participant's), the board he may submit
    # to and its public inputs; B's submission awaits a decision he cannot take.
    "submissions": {"GET": 200, "POST": 405},
    "submission_new": {"GET": 200, "POST": 400},
    "submission_inputs": {"GET": 200, "POST": 405},
    "submission": {"GET": (200, 404), "POST": 405},
    "submission_request": {"GET": 405, "POST": (REDIRECT, 404)},
    "submission_cancel": {"GET": 405, "POST": (409, 404)},
    "participant_register": {"GET": REDIRECT, "POST": REDIRECT},
}
REFUSED = {403, 404, 405}


def test_a_participant_reaches_only_his_runs_and_public_pages(world: World) -> None:
    problems = []
    leaks = []
    for route in ROUTES:
        CRASHES.clear()
        # A fresh login per route: the logout route ends the session (its cookie is cleared).
        client = Client(raise_request_exception=False)
        client.force_login(world.participants["A"])
        row = ACCESS[route.key]
        urls, bodies = {}, {}
        for owner, side in (("A", world.a), ("B", world.b)):
            kwargs = row.kwargs(world, side) if row.kwargs else {}
            urls[owner] = reverse(route.key, kwargs=kwargs) if kwargs else reverse(route.key)
            bodies[owner] = row.data(world, side) if row.data else None
        for method in row.methods:
            seen = []
            for owner in ("A", "B"):
                response, content = _request(client, method, urls[owner], bodies[owner], row.json)
                seen.append(_outcome(response))
                text = content.decode(errors="replace")
                leaks += [f"{method} {urls[owner]}: {s!r}" for s in SECRETS if s in text]
            declared = PARTICIPANT.get(route.key, {}).get(method)
            if declared is not None:
                if tuple(seen) != _expected(declared):
                    problems.append(f"{route.key} {method}: expected {declared}, got {seen}")
            elif not set(seen) <= REFUSED:
                problems.append(f"{route.key} {method}: a participant got {seen}")
        problems += [f"crash: {c}" for c in CRASHES[:2]]
    assert not leaks, "a participant saw: " + "\n".join(leaks)
    assert not problems, "\n".join(problems)


# A participant not approved yet, or revoked, may do nothing but read the public pages: on these
# routes he gets what any visitor gets (home sends him on, the register page to his page, which
# refuses him); on every other route he is refused (403, 404, 405) or sent to log in.
PENDING: dict[str, dict[str, Cell]] = {
    "home": {"GET": REDIRECT, "POST": REDIRECT},
    "healthz": {"GET": 200, "POST": 405},
    "login": {"GET": 200, "POST": 200},
    "favicon": {"GET": 200, "POST": 405},
    "logout": {"GET": 405, "POST": LOGIN},
    "set_language": {"GET": REDIRECT, "POST": REDIRECT},
    "api-schema": {"GET": 200, "POST": 405},
    "api-docs": {"GET": 200, "POST": 405},
    "leaderboards": {"GET": 200, "POST": 405},
    "participant_register": {"GET": REDIRECT, "POST": REDIRECT},
}


def _pending_accounts(world: World) -> dict[str, User]:
    """Three accounts in that state: participant_a revoked by an admin through the page (his
    run and his submission stay, his session too), an account registered through the page and
    not approved yet (inactive until then), and one an admin created unapproved in the admin."""
    from participants.models import Participant

    revoked = world.participants["A"]
    admin = Client()
    admin.force_login(world.personas.admin)
    response = admin.post(
        reverse("participant_approve", kwargs={"pk": revoked.participant.pk}), {"approved": "0"}
    )
    assert response.status_code == 302
    revoked.refresh_from_db()
    assert not Participant.objects.get(user=revoked).approved
    registered = Client().post(
        reverse("participant_register"),
        {
            "username": "newcomer",
            "email": "newcomer@example.org",
            "organisation": "Newcomers",
            "password1": "a-long-pass-phrase-9",
            "password2": "a-long-pass-phrase-9",
        },
    )
    assert registered.status_code == 200
    unapproved = make_user("unapproved")
    Participant.objects.create(user=unapproved, organisation="Unapproved", approved=False)
    return {
        "revoked": revoked,
        "registered": User.objects.get(username="newcomer"),
        "unapproved": unapproved,
    }


def test_a_revoked_or_unapproved_participant_reaches_only_public_pages(world: World) -> None:
    problems = []
    leaks = []
    accounts = _pending_accounts(world)
    # The internal board (a participant in good standing reads it) is refused him too.
    internal = {"slug": world.submission_board.slug}
    extra = [reverse("leaderboard", kwargs=internal), reverse("submissions")]
    for name, user in accounts.items():
        # His session from before the revocation: logged in once, kept across the routes.
        client = Client(raise_request_exception=False)
        client.force_login(user)
        for url in extra:
            response, _content = _request(client, "GET", url)
            if _outcome(response) not in REFUSED | {LOGIN}:
                problems.append(f"{name}: GET {url}: got {_outcome(response)}")
        for route in ROUTES:
            CRASHES.clear()
            if route.key == "logout":
                continue  # it would end the session the other routes are asked with
            row = ACCESS[route.key]
            urls, bodies = {}, {}
            for owner, side in (("A", world.a), ("B", world.b)):
                kwargs = row.kwargs(world, side) if row.kwargs else {}
                urls[owner] = reverse(route.key, kwargs=kwargs) if kwargs else reverse(route.key)
                bodies[owner] = row.data(world, side) if row.data else None
            for method in row.methods:
                seen = []
                for owner in ("A", "B"):
                    response, content = _request(
                        client, method, urls[owner], bodies[owner], row.json
                    )
                    seen.append(_outcome(response))
                    text = content.decode(errors="replace")
                    leaks += [
                        f"{name}: {method} {urls[owner]}: {s!r}" for s in SECRETS if s in text
                    ]
                declared = PENDING.get(route.key, {}).get(method)
                anonymous = _expected(row.methods[method]["anon"])
                if declared is not None:
                    # What a visitor gets is fine too (an inactive account's session is none).
                    if tuple(seen) not in (_expected(declared), anonymous):
                        problems.append(
                            f"{name}: {route.key} {method}: expected {declared}, got {seen}"
                        )
                elif not set(seen) <= REFUSED | {LOGIN}:
                    problems.append(f"{name}: {route.key} {method}: got {seen}")
            problems += [f"crash: {c}" for c in CRASHES[:2]]
    assert not leaks, "a pending participant saw: " + "\n".join(leaks)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("language", "awaits", "wrong"),
    [
        ("en", "This account awaits approval", "Wrong username or password"),
        ("ru", "ожидает одобрения", "Неверное имя пользователя или пароль"),
    ],
)
def test_a_pending_participant_logging_in_is_told_his_account_awaits_approval(
    world: World, language: str, awaits: str, wrong: str
) -> None:
    from tests.conftest import PASSWORD

    accounts = _pending_accounts(world)
    passwords = {"revoked": PASSWORD, "registered": "a-long-pass-phrase-9", "unapproved": PASSWORD}
    for name, user in accounts.items():
        client = Client(HTTP_ACCEPT_LANGUAGE=language)
        data = {"username": user.username, "password": passwords[name]}
        response = client.post(reverse("login"), data)
        page = response.content.decode()
        assert response.status_code == 200, name
        assert awaits in page and wrong not in page, name
        assert "_auth_user_id" not in client.session, name
        # A wrong password says nothing about the account.
        response = client.post(reverse("login"), {**data, "password": "not-his-password"})
        page = response.content.decode()
        assert wrong in page and awaits not in page, name
    # Approved again, he logs in.
    participant = accounts["revoked"].participant
    participant.approved = True
    participant.save(update_fields=["approved"])
    client = Client(HTTP_ACCEPT_LANGUAGE=language)
    response = client.post(
        reverse("login"), {"username": accounts["revoked"].username, "password": PASSWORD}
    )
    assert response.status_code == 302 and "_auth_user_id" in client.session


# Who may add an answer to an exam of each side: the exam's managers among the personas.
EXAM_MANAGERS = {
    "A": ("sup_a", "admin", "sup_a_expert_a", "sup_a2"),
    "B": ("sup_b", "admin", "sup_b_expert_a"),
}


def test_an_exam_takes_only_answers_its_panel_scores(world: World) -> None:
    """An answer of the other panel is refused by name (422, the field's error), nothing is
    copied or added; an answer both panels score is taken (a real payload, so the refusal is
    for the right reason)."""
    from quality.control import answer_routed_to_panel
    from quality.models import ExamItem
    from work.models import ReservedAnswer

    clients = _clients(world)
    problems = []
    for owner, other in (("A", "B"), ("B", "A")):
        side, foreign = world.side(owner), world.side(other).answer
        assert not answer_routed_to_panel(panel=side.panel, answer=foreign)
        url = reverse("console_exam_item_add", kwargs={"pk": side.exam.pk})
        for persona in EXAM_MANAGERS[owner]:
            for answer, want in ((foreign, 422), (world.shared, REDIRECT)):
                assert answer is not None
                with transaction.atomic():
                    copies = ReservedAnswer.objects.filter(source=answer)
                    before = (ExamItem.objects.count(), copies.count())
                    response = clients[persona].post(url, {"answer": str(answer.pk)})
                    after = (ExamItem.objects.count(), copies.count())
                    # The exam is in use: the item goes into a new version of it.
                    taken = ExamItem.objects.filter(
                        exam__lineage=side.exam.lineage, answer__reserved__source=answer
                    ).exists()
                    transaction.set_rollback(True)
                got = _outcome(response)
                if got != want:
                    problems.append(f"{persona} on {owner}'s exam, answer {answer.pk}: got {got}")
                elif want == 422:
                    page = response.content.decode()
                    if 'id="answer-errors"' not in page or after != before or taken:
                        problems.append(f"{persona} on {owner}'s exam: {before} -> {after}")
                elif not taken:
                    problems.append(f"{persona} on {owner}'s exam: the shared answer not added")
    assert not problems, "\n".join(problems)


def test_the_markup_pages_show_a_supervisor_his_panels_markups_only(world: World) -> None:
    """The texts page and every comparison: a supervisor reads the submitted markups of his
    panels' experts only (not another panel's, not a participant's system's, no draft), and
    another panel's markup is not found even by its id; an admin reads every submitted one."""
    from markup.models import Markup, MarkupStatus
    from tests.security.conftest import MARKUP_DRAFT, MARKUP_SUBMITTED, MARKUP_SYSTEM

    def markers(*keys: str, kinds: tuple[str, ...]) -> set[str]:
        return {kind.format(key=key) for key in keys for kind in kinds}

    everything = markers("A", "B", kinds=(MARKUP_SUBMITTED, MARKUP_DRAFT, MARKUP_SYSTEM))
    readable = {
        "sup_a": markers("A", kinds=(MARKUP_SUBMITTED,)),
        "sup_a2": markers("A", kinds=(MARKUP_SUBMITTED,)),
        "sup_b": markers("B", kinds=(MARKUP_SUBMITTED,)),
        "admin": markers("A", "B", kinds=(MARKUP_SUBMITTED, MARKUP_SYSTEM)),
    }
    texts = {"A": world.a.markup_text, "B": world.b.markup_text, "shared": world.markup_text}
    opens = {
        "sup_a": {"A", "shared"},
        "sup_a2": {"A", "shared"},
        "sup_b": {"B", "shared"},
        "admin": {"A", "B", "shared"},
    }
    clients = _clients(world)
    problems = []
    for persona, wanted in readable.items():
        client = clients[persona]
        listing = client.get(reverse("markup_texts")).content.decode()
        shown = {m for m in everything if m in listing}
        # Submitted markups are listed by their author; the system's by its accuracy table.
        if shown != wanted:
            problems.append(f"{persona}: the texts page shows {sorted(shown)}")
        for key, text in texts.items():
            url = reverse("markup_compare", kwargs={"pk": text.pk})
            response = client.get(url)
            want = 200 if key in opens[persona] else 404
            if response.status_code != want:
                problems.append(f"{persona}: {key}'s text: got {response.status_code}")
                continue
            if want == 404:
                continue
            page = response.content.decode()
            leaked = {m for m in everything - wanted if m in page}
            if leaked:
                problems.append(f"{persona}: {key}'s comparison shows {sorted(leaked)}")
            # Asked by id, a markup he may not read does not exist.
            for markup in Markup.objects.filter(text=text):
                allowed_markup = markup.status == MarkupStatus.SUBMITTED and (
                    persona == "admin"
                    or (
                        markup.panel is not None
                        and markup.panel.supervisors.filter(
                            pk=world.users[persona].pk  # type: ignore[union-attr]
                        ).exists()
                    )
                )
                got = client.get(url, {"x": markup.pk}).status_code
                if got != (200 if allowed_markup else 404):
                    problems.append(f"{persona}: markup {markup.author} of {key}: got {got}")
    assert not problems, "\n".join(problems)


def _guess_kwargs(route: Route) -> Kwargs | None:
    """For an undeclared route: fill its arguments with the owner's panel ids, to show something."""
    if not route.kwargs:
        return None
    return lambda w, s: dict.fromkeys(route.kwargs, s.panel.pk)


def test_every_api_operation_of_the_schema_is_in_the_matrix() -> None:
    """The OpenAPI schema is the API's contract: each operation must be a declared row+method."""
    missing = []
    for method, path in api_operations():
        match = resolve(path.replace("{id}", "1").replace("{pk}", "1"))
        key = f"{match.namespace}:{match.url_name}" if match.namespace else match.url_name
        row = ACCESS.get(key or "")
        if row is None or method not in row.methods:
            missing.append(f"{method} {path} ({key})")
    assert not missing, "API operations outside the access matrix: " + ", ".join(missing)


def test_the_admin_site_is_for_staff_only(world: World) -> None:
    """Every page of the admin (index and each model's list and add form) refuses non-staff."""
    from django.contrib import admin

    urls = [reverse("admin:index")]
    for model in admin.site._registry:
        meta = model._meta
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist"))
        urls.append(reverse(f"admin:{meta.app_label}_{meta.model_name}_add"))
    clients = _clients(world)
    wrong = []
    for url in urls:
        for persona in PERSONAS:
            response, _content = _request(clients[persona], "GET", url)
            got = _outcome(response)
            # Staff get the page (or 403 where the model admin allows no additions).
            ok = got in (200, 403) if persona == "admin" else got == LOGIN
            if not ok:
                wrong.append(f"GET {url} as {persona}: got {got}")
    assert not wrong, "\n".join(wrong)
