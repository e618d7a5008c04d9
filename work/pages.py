"""What the pages of every kind of work share: who the expert is, where an item stands in its
sequence (an exam attempt), where "next" goes, and which page shows an assignment.

Each kind of work has its own page module (work.views_rubric, work.views_compare) that reads,
renders and submits its assignment itself; `/assignments/<pk>/` (work.views.assignment_page)
only picks the module by the assignment's kind (`pages`, filled in WorkConfig.ready()).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.translation import gettext as _

from lib.registry import Registry
from panels.access import check_object, require
from panels.models import Expert
from work import entries, hooks, services
from work.models import Assignment, AssignmentStatus, Estimate


class View(Protocol):
    def __call__(self, request: HttpRequest, assignment: Assignment) -> HttpResponse: ...


class SubmitView(Protocol):
    def __call__(
        self, request: HttpRequest, lead: Assignment, estimates: list[Estimate]
    ) -> HttpResponse: ...


@dataclass(frozen=True)
class KindPage:
    """The page of one kind of work: what it reads of an assignment (its related rows and
    columns), shown on GET, submitted on POST (both at the assignment's own URL, so a link
    never needs to know the kind). A submission is handed the checked assignment and its
    entry's estimates (`own_entry`)."""

    related: tuple[str, ...]
    fields: tuple[str, ...]
    show: View
    submit: SubmitView


pages: Registry[KindPage] = Registry("work.pages")


def own_assignment(
    request: HttpRequest, pk: int, reads: Iterable[KindPage], **filters: Any
) -> Assignment:
    """The assignment if the user may score it (`work.score_assignment`); 404 otherwise, and 403
    for a user who is no expert at all (`work.view_queue`).

    One query: the assignment is read with what the given pages show (every registered page
    when its kind is not known yet) and with its expert, which the rule compares to the user
    and which is then cached on request.user (the page's navigation asks for it again). The
    page and its error paths render this instance; nothing reads the assignment again.
    """
    reads = list(reads)
    related = dict.fromkeys(name for page in reads for name in page.related)
    fields = dict.fromkeys(("id", "pair", "kind", *(f for page in reads for f in page.fields)))
    assignment = check_object(
        request.user,
        "work.score_assignment",
        Assignment.objects.select_related(*related)
        .only(*fields)
        .annotate(membership_paused=services.membership_paused())
        .filter(pk=pk, **filters)
        .first(),
        role="work.view_queue",
    )
    # Fills the reverse one-to-one cache (user.expert); nothing is written.
    request.user.expert = assignment.expert  # type: ignore[union-attr]
    return assignment


def own_entry(request: HttpRequest, pk: int) -> tuple[Assignment, list[Estimate]]:
    """The assignment (its key, pair and expert) if the user may score it, with the estimates
    of its entry (work.entries: one expert's work on the answer for every panel, scored on one
    page; a pair is an entry of one); 403/404 as `own_assignment`.

    One query: the estimates are read with their assignment's expert, which the rule checks on
    the lead (the entry has one expert by construction; the submission locks and reads every
    assignment itself).
    """
    estimates = list(
        Estimate.objects.filter(assignment__in=entries.entry_of(pk))
        .select_related("assignment__expert", "triple")
        .only(
            "triple_id",
            "triple__group",
            "assignment__id",
            "assignment__pair",
            "assignment__expert__user",
        )
    )
    lead = next((e.assignment for e in estimates if e.assignment_id == pk), None)
    if lead is None:
        # No estimates: whether it exists for the user at all is asked of the assignment.
        lead = Assignment.objects.select_related("expert").filter(pk=pk).first()
    check_object(request.user, "work.score_assignment", lead, role="work.view_queue")
    assert lead is not None, "check_object raises for a missing assignment"
    return lead, estimates


def opened(request: HttpRequest, assignment: Assignment) -> tuple[Assignment, str] | HttpResponse:
    """An assignment's page opening it: (the assignment, opened where it may be; why it is
    closed, or ""), or the way back to the queue when the expert's work in its panel is
    paused (its items are not opened at all until resumed)."""
    if services.assignment_paused(assignment):
        messages.error(request, _("Your work in this panel is paused by its supervisor."))
        return redirect("queue")
    closed = services.closed_reason(assignment)
    if not closed and assignment.status == AssignmentStatus.ASSIGNED:
        assignment = services.assignment_open(assignment=assignment)
    return assignment, closed


def expert_or_403(request: HttpRequest) -> Expert:
    require(request.user, "work.view_queue")
    return request.user.expert  # type: ignore[union-attr]


def user_id(request: HttpRequest) -> int:
    pk = request.user.pk
    assert pk is not None, "the views below require a logged-in user"
    return int(pk)


def sequence_position(assignment_id: int, kind: str) -> hooks.SequencePosition | None:
    """The assignment's place in its sequence (an exam attempt: quality registers it)."""
    find = hooks.position.get(kind)
    return find(assignment_id) if find is not None else None


def next_url(
    assignment_id: int, exam: hooks.SequencePosition | None, kind: str | None = None
) -> str:
    """Where "save and open the next item" goes, for every page: within an exam, only its own
    items (the exam's continue page picks the next unanswered item of the same attempt and
    after the last one shows the result: quality.views_exams.attempt_continue); regular work
    goes through the queue, which never opens exam items; with `kind` (work.kinds), only the
    queue's items of that kind (the side-by-side page opens the next pair, not an answer)."""
    if exam is not None:
        return exam.continue_url(after=assignment_id)
    url = reverse("queue_next") + f"?after={assignment_id}"
    return f"{url}&kind={kind}" if kind else url
