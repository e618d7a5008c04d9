"""A reviewer who supervises the same panel reviews blind to the author (authoring.see_author).

The persona the access matrix lacked: an expert with the review role in panel A who is also A's
supervisor. He walks every writing route a reviewer and a supervisor reach, with real payloads
(the review form, the originality verdict, the campaign's exports): he may do both jobs, and
nowhere is the author named to him (the slot page, the diff, the queue, instructions.jsonl and
the workbook). A supervisor of A who does not review there sees the author, and so does the
admin, on the same pages: the rule hides the author from the reviewer, not from everyone.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any

import openpyxl
import pytest
from django.test import Client
from django.urls import reverse

from authoring import services
from authoring.models import Quota, Review, Slot, SlotState
from panels.models import Expert, Membership
from taxonomy.models import FunctionalStyle
from tests.conftest import PASSWORD, Personas, make_expert

pytestmark = pytest.mark.django_db

TEXT = (
    "Составьте для студентов-биологов краткий конспект о роли хлоропластов в клетке: "
    "строение, пигменты, световая и темновая фазы, со ссылкой на один учебник."
)


@dataclass
class Writing:
    author: Expert
    rev_sup: Expert
    editor: Expert
    personas: Personas
    campaign: Any
    slot: Slot


@pytest.fixture
def writing(personas: Personas) -> Writing:
    panel = personas.panel_a
    author = personas.expert_a
    Membership.objects.filter(expert=author, panel=panel).update(can_author=True)
    rev_sup = make_expert("rev_sup_a", panel)
    Membership.objects.filter(expert=rev_sup, panel=panel).update(can_review=True)
    panel.supervisors.add(rev_sup.user)
    editor = make_expert("editor_rs", panel)
    Membership.objects.filter(expert=editor, panel=panel).update(can_edit=True)
    campaign = services.campaign_create(
        name="reviewer-supervisor", user=personas.admin, double_review_share=0.0
    )
    quota = Quota.objects.filter(plan__campaign=campaign, panel=panel, count__gt=1).first()
    assert quota is not None
    slot = services.slot_take(
        campaign=campaign,
        expert=author,
        panel=panel,
        task=quota.task,
        complexity=quota.complexity,
    )
    style = quota.task.style_id or FunctionalStyle.objects.values_list("pk", flat=True)[0]
    services.slot_submit(slot=slot, values={"text": TEXT, "style": style}, user=author.user)
    return Writing(author, rev_sup, editor, personas, campaign, Slot.objects.get(pk=slot.pk))


def _client(user: Any) -> Client:
    client = Client(raise_request_exception=False)
    assert client.login(username=user.username, password=PASSWORD)
    return client


def _pages(client: Client, w: Writing) -> dict[str, Any]:
    """Every writing page a reviewer or a supervisor of the slot's panel reaches."""
    slot = w.slot
    return {
        "home": client.get(reverse("authoring_home")),
        "slot": client.get(reverse("authoring_slot", args=[slot.pk])),
        "diff": client.get(reverse("authoring_diff", args=[slot.pk, 1])),
        "dashboard": client.get(reverse("authoring_dashboard", args=[w.campaign.pk])),
        "jsonl": client.get(reverse("authoring_export", args=[w.campaign.pk, "jsonl"])),
        "xlsx": client.get(reverse("authoring_export", args=[w.campaign.pk, "xlsx"])),
    }


def _exported_authors(pages: dict[str, Any]) -> tuple[list[str], list[str]]:
    rows = [json.loads(line) for line in pages["jsonl"].content.decode().splitlines() if line]
    sheet = openpyxl.load_workbook(io.BytesIO(pages["xlsx"].content))["instructions"]
    header = [c.value for c in sheet[1]]
    column = header.index("author")
    cells = [str(r[column] or "") for r in sheet.iter_rows(min_row=2, values_only=True)]
    return [r["author"] for r in rows], cells


def _accept(w: Writing, django_capture_on_commit_callbacks: Any) -> None:
    """The reviewer-supervisor accepts through the review form; the editor proofreads; the
    supervisor-reviewer gives the originality verdict through its form."""
    client = _client(w.rev_sup.user)
    reviewed = client.post(
        reverse("authoring_review", args=[w.slot.pk]), {"verdict": "accept", "comment": ""}
    )
    assert reviewed.status_code == 302, reviewed.content
    assert Review.objects.filter(slot=w.slot, reviewer=w.rev_sup, verdict="accept").exists()
    with django_capture_on_commit_callbacks(execute=True):
        done = _client(w.editor.user).post(
            reverse("authoring_edit", args=[w.slot.pk]),
            {"text": TEXT, "reference_answer": "", "note": "", "done": "1"},
        )
    assert done.status_code == 302, done.content
    verdict = client.post(
        reverse("authoring_originality", args=[w.slot.pk]),
        {"verdict": "original", "comment": ""},
    )
    assert verdict.status_code == 302, verdict.content
    w.slot.refresh_from_db()
    assert w.slot.state == SlotState.ACCEPTED


def test_the_reviewer_who_supervises_reviews_blind_to_the_author(
    writing: Writing, django_capture_on_commit_callbacks: Any
) -> None:
    w = writing
    pseudonym = w.author.pseudonym
    client = _client(w.rev_sup.user)
    pages = _pages(client, w)
    for name in ("home", "slot", "diff", "dashboard"):
        assert pages[name].status_code == 200, name
        assert pseudonym not in pages[name].content.decode(), name
    # He reviews it: the form is on the slot page, and the queue lists it.
    assert 'id="review-form"' in pages["slot"].content.decode()
    assert reverse("authoring_slot", args=[w.slot.pk]) in pages["home"].content.decode()
    _accept(w, django_capture_on_commit_callbacks)
    pages = _pages(client, w)
    for name in ("slot", "diff"):
        assert pages[name].status_code == 200 and pseudonym not in pages[name].content.decode()
    assert pages["jsonl"].status_code == 200 and pages["xlsx"].status_code == 200
    jsonl, xlsx = _exported_authors(pages)
    # The instruction is exported (he supervises the panel), its author left blank for him.
    assert jsonl == [""] and xlsx == [""]
    assert pseudonym not in pages["jsonl"].content.decode()


def test_a_supervisor_who_does_not_review_there_and_the_admin_see_the_author(
    writing: Writing, django_capture_on_commit_callbacks: Any
) -> None:
    w = writing
    pseudonym = w.author.pseudonym
    _accept(w, django_capture_on_commit_callbacks)
    for user in (w.personas.supervisor_a, w.personas.admin):
        pages = _pages(_client(user), w)
        assert pages["slot"].status_code == 200
        assert pseudonym in pages["slot"].content.decode(), user
        assert _exported_authors(pages) == ([pseudonym], [pseudonym]), user


def test_the_reviewer_who_supervises_another_panel_is_unchanged(
    writing: Writing, django_capture_on_commit_callbacks: Any
) -> None:
    """Reviewing in A while supervising B: B's authors are his to see, A's never."""
    w = writing
    w.personas.panel_b.supervisors.add(w.rev_sup.user)
    Membership.objects.filter(expert=w.rev_sup).update(can_review=True)
    _accept(w, django_capture_on_commit_callbacks)
    page = _client(w.rev_sup.user).get(reverse("authoring_slot", args=[w.slot.pk]))
    assert page.status_code == 200 and w.author.pseudonym not in page.content.decode()
