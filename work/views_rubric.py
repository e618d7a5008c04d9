"""The rubric page: an answer scored on the criteria of every panel of its entry (server-rendered,
htmx for drafts), its submission, drafts, skips and flags.

Shown and submitted at the assignment's URL (work.views.assignment_page picks this module for
pointwise work, work.pages); the submission calls the services itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_POST

from lib.markdown import pygments_css
from protocol.rationale import RationaleRule
from taxonomy.models import CriterionGroup
from work import entries, flags, kinds, pages, selectors, services
from work.forms import items_from_post, parse_id, time_total
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    FlagKind,
    FlagReason,
)

# What the scoring page shows or checks of an assignment and its answer: long JSON and text
# columns it never shows (generation metadata, task descriptions) are not read.
_PAGE_FIELDS = (
    "id",
    "status",
    "kind",
    "locked",
    "pair",
    "drafts_backup",
    "reserved_until",
    "expert",
    "kind",
    "panel__number",
    "answer__text",
    "answer__instruction__text",
    "answer__instruction__reference_answer",
    "answer__instruction__complexity",
    "answer__instruction__task__name_en",
    "answer__instruction__task__name_ru",
    "answer__instruction__style__name_en",
    "answer__instruction__style__name_ru",
)


def _own_assignment(request: HttpRequest, pk: int) -> Assignment:
    """The user's own assignment read for this page (work.pages.own_assignment)."""
    return pages.own_assignment(request, pk, [PAGE])


def _entry_parts(lead: Assignment, estimates: list[Estimate]) -> list[entries.EntryPart]:
    """The criteria (triple ids) of the lead's entry per assignment, the one holding the
    critical gates marked (work.pages.own_entry read them)."""
    triples: dict[int, list[int]] = {lead.pk: []}
    gates: set[int] = set()
    for e in estimates:
        triples.setdefault(e.assignment_id, []).append(e.triple_id)
        if e.triple.group == CriterionGroup.CRITICAL:
            gates.add(e.assignment_id)
    parts = [entries.EntryPart(a, ids, a in gates) for a, ids in triples.items()]
    return parts


def _progress_done(rows: list[dict[str, Any]]) -> int:
    """How many criteria have a score or N/A; after a critical violation the skipped rest
    counts as done (static/js/scoring.js recounts the same way as scores are chosen)."""
    stop = any(
        r["group"] == "critical"
        and r["score"] is not None
        and not r["is_na"]
        and str(r["score"]) == r["top"]
        for r in rows
    )
    return sum(
        1
        for r in rows
        if r["score"] is not None or r["is_na"] or (stop and r["group"] != "critical")
    )


def _render_assignment(
    request: HttpRequest,
    assignment: Assignment,
    *,
    posted: Mapping[int, Any] | None = None,
    errors: dict[int, list[str]] | None = None,
    form_errors: list[str] | None = None,
    closed_reason: str = "",
    status: int = 200,
    flag_form: Mapping[str, str] | None = None,
    opening: bool = False,
) -> HttpResponse:
    instruction = assignment.answer.instruction
    exam = pages.sequence_position(assignment.pk, assignment.kind)
    rows = selectors.scoring_rows(assignment, posted, errors, entry=True)
    if opening:
        # The expert opened the answer: its other panels' work starts with it (work.entries).
        entries.entry_open(
            assignment,
            {
                r["assignment_id"]
                for r in rows
                if r["assignment_status"] == AssignmentStatus.ASSIGNED
            },
        )
    panels = sorted({r["panel"] for r in rows}) or [assignment.panel.number]
    # Each criterion's guideline is its own panel's (an entry may span panels): one URL per
    # panel, reversed once, not per row.
    numbers = {r["panel_id"]: r["panel"] for r in rows} or {
        assignment.panel_id: assignment.panel.number
    }
    guideline_urls = {pk: reverse("guidelines_panel", args=[pk]) for pk in numbers}
    for row in rows:
        row["guidelines_url"] = guideline_urls[row["panel_id"]]
    panel_guidelines = [
        {"number": numbers[pk], "url": url}
        for pk, url in sorted(guideline_urls.items(), key=lambda item: numbers[item[0]])
    ]
    context = {
        # More than one: the answer's criteria come from several panels (each row says whose).
        "panels": panels,
        "panel_guidelines": panel_guidelines,
        "assignment": assignment,
        "instruction": instruction,
        "answer_text": assignment.answer.text,
        "rows": rows,
        "progress_done": _progress_done(rows),
        # Skip and flag: open work of a kind that allows it, never an exam item.
        "can_skip": assignment.kind != AssignmentKind.EXAM
        and not kinds.of(assignment).flag_refusal(),
        "flag_reasons": FlagReason.choices,
        "flag_form": flag_form or {},
        "form_errors": form_errors or [],
        "closed_reason": closed_reason,
        "editable": assignment.status != AssignmentStatus.RELEASED and not assignment.locked,
        "pygments_css": pygments_css(),
        "next_url": pages.next_url(assignment.pk, exam),
        "exam": exam,
        # The page checks rationales with the server's rule and parameters (static/js).
        "rationale_rule": RationaleRule.current().for_client(),
    }
    return render(request, "work/assignment.html", context, status=status)


def rubric_page(request: HttpRequest, assignment: Assignment) -> HttpResponse:
    """The rubric page of an answer (GET of work.views.assignment_page)."""
    state = pages.opened(request, assignment)
    if isinstance(state, HttpResponse):
        return state
    assignment, closed = state
    return _render_assignment(
        request, assignment, closed_reason=closed, opening=not closed and not assignment.locked
    )


def rubric_submit(
    request: HttpRequest, lead: Assignment, estimates: list[Estimate]
) -> HttpResponse:
    """Submit the scores of an entry (POST of work.views.assignment_page): every criterion of
    every panel on the page at once, then the next answer. A refusal reads the page's
    assignment once to show the form again (the submission itself reads only the estimates)."""
    pk = lead.pk
    parts = _entry_parts(lead, estimates)
    # The panels whose criteria were sent: the page sends every row of the entry; a client that
    # posts one assignment's criteria submits that assignment only.
    sent = [
        part
        for part in parts
        if any(
            f"score_{t}" in request.POST or f"rationale_{t}" in request.POST
            for t in part.triple_ids
        )
    ]
    parts = sent or parts
    triple_ids = [tid for part in parts for tid in part.triple_ids]
    items, field_errors = items_from_post(request.POST, triple_ids)
    posted = {item.triple_id: item for item in items}
    total = time_total(request.POST)
    if field_errors or total is None:
        # Not a submission at all (hand-made or corrupted fields): shown again, nothing lost.
        return _render_assignment(
            request,
            _own_assignment(request, pk),
            posted=posted,
            errors=field_errors,
            form_errors=[] if total is not None else [_("time_total: not a duration.")],
            status=400,
        )
    try:
        # Every assignment of the entry at once, or none (the service locks and reads each row
        # by its key).
        result = services.entry_submit(
            parts,
            items,
            total_ms=total,
            user=request.user,
            submission_key=request.POST.get("submission_key", ""),
        )
    except services.ScoringClosed as exc:
        return _render_assignment(
            request, _own_assignment(request, pk), posted=posted, closed_reason=str(exc), status=409
        )
    if not result.ok:
        return _render_assignment(
            request,
            _own_assignment(request, pk),
            posted=posted,
            errors=result.errors,
            form_errors=result.form_errors,
            status=422,
        )
    if result.critical_stop:
        messages.info(request, _("Critical violation recorded: the other criteria were skipped."))
    else:
        messages.success(request, _("Scores saved."))
    if request.POST.get("then") == "stay":
        return redirect("assignment", pk=pk)
    exam = pages.sequence_position(pk, result.kind)
    return redirect(pages.next_url(pk, exam))


@login_required
@require_POST
def assignment_draft(request: HttpRequest, pk: int) -> HttpResponse:
    """htmx autosave of one criterion while the expert types."""
    assignment = _own_assignment(request, pk)
    triple_id = parse_id(request.POST.get("triple"))
    if triple_id is None:
        raise Http404
    # The criterion may be another panel's of the same entry (work.entries): its draft is kept
    # on its own assignment.
    owner = (
        Estimate.objects.filter(assignment__in=entries.entry_of(assignment), triple_id=triple_id)
        .values_list("assignment_id", flat=True)
        .first()
    )
    if owner is None:
        raise Http404
    items, field_errors = items_from_post(request.POST, [triple_id])
    if field_errors:
        return HttpResponse(
            _("Not saved: %(why)s") % {"why": " ".join(field_errors[triple_id])}, status=422
        )
    try:
        services.estimate_save_draft(assignment=Assignment(pk=owner), item=items[0])
    except services.ScoringClosed as exc:
        return HttpResponse(str(exc), status=409)
    except services.DraftRefused as exc:
        return HttpResponse(
            _("Not saved: %(field)s: %(why)s") % {"field": f"{exc.field}_{triple_id}", "why": exc},
            status=422,
        )
    return HttpResponse(_("Draft saved"))


@login_required
@require_POST
def assignment_flag(request: HttpRequest, pk: int) -> HttpResponse:
    """Skip the answer (with a reason) or flag it as broken: either releases it for this expert."""
    assignment = _own_assignment(request, pk)
    fields = {
        "kind": request.POST.get("kind", ""),
        "reason": request.POST.get("reason", ""),
        "comment": request.POST.get("comment", ""),
    }
    if services.assignment_paused(assignment):
        return _render_assignment(
            request,
            assignment,
            form_errors=[_("Your work in this panel is paused by its supervisor.")],
            status=409,
        )
    try:
        flag = flags.entry_flag(assignment_id=assignment.pk, **fields)
    except flags.FlagRefused as exc:
        return _render_assignment(
            request,
            assignment,
            form_errors=[f"{exc.field}: {exc}"],
            flag_form=fields,
            status=400,
        )
    except services.ScoringClosed as exc:
        return _render_assignment(
            request, assignment, form_errors=[str(exc)], flag_form=fields, status=409
        )
    if flag.kind == FlagKind.SKIP:
        messages.info(request, _("Answer skipped: it goes to another expert."))
    else:
        messages.info(request, _("Thank you: the supervisor will look at this answer."))
    return redirect(pages.next_url(pk, None))


# What the rubric page reads of its assignment (work.pages.own_assignment).
PAGE = pages.KindPage(
    related=("expert", "answer__instruction__task", "answer__instruction__style", "panel"),
    fields=_PAGE_FIELDS,
    show=rubric_page,
    submit=rubric_submit,
)
