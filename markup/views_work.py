"""The expert's span markup work (markup.work): his queue, the markup page, its autosaved
drafts and its submission; and the assignment of texts to a panel (its supervisors, admins).

Thin views: the page's JSON goes to markup.work, whose refusals come back as 400 (unreadable)
or 422 (readable but against the rules, every issue listed), naming the field."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.translation import get_language
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from lib import bounded_json
from lib.integers import ascii_int
from markup import selectors, work
from markup.models import Markup, MarkupStatus
from panels.access import check_object, require
from panels.models import Panel
from protocol.markup_classifier import load_classifier

MAX_BODY_BYTES = 2_000_000


def _own_markup(request: HttpRequest, pk: int) -> Markup:
    markup = (
        Markup.objects.select_related("text", "panel", "expert")
        .filter(pk=pk, panel__isnull=False)
        .first()
    )
    return check_object(request.user, "markup.mark_text", markup, role="markup.do_markup")


@login_required
@require_GET
def work_queue(request: HttpRequest) -> HttpResponse:
    require(request.user, "markup.do_markup")
    rows = work.expert_queue(request.user.expert.pk)  # type: ignore[union-attr]
    return render(request, "markup/work_queue.html", {"rows": rows})


def classifier_entries(markup: Markup) -> list[dict[str, Any]]:
    """The codes the page offers: those allowed for the text's subject, in the classifier's
    order, with their subtypes' standard comments in the page's language."""
    text = markup.text
    classifier = load_classifier(text.classifier_name, text.classifier_version)
    english = (get_language() or "ru").startswith("en")
    entries = []
    for t in classifier.for_subject(text.subject):
        entries.append(
            {
                "code": t.code,
                "group": t.group,
                "name": (t.name_en if english and t.name_en else t.name_ru),
                "comment": t.standard_comment("", "en" if english else "ru"),
                "needs_correction": t.needs_correction,
                "scored": t.scored,
                "subtypes": [
                    {
                        "code": s.code,
                        "comment": (s.comment_en if english and s.comment_en else s.comment_ru),
                    }
                    for s in t.subtypes
                ],
            }
        )
    return entries


@login_required
@require_GET
def markup_page(request: HttpRequest, pk: int) -> HttpResponse:
    markup = _own_markup(request, pk)
    computed, differ = work.score_check(markup)
    english = (get_language() or "ru").startswith("en")
    criteria = [
        {
            "name": c.code,
            "title": c.name(english),
            "about": c.about(english),
            "max": c.top,
            "range": range(c.top + 1),
            "score": markup.criteria.get(c.code),
            "rationale": markup.rationales.get(c.code, ""),
            "computed": None if computed is None else computed.criteria.get(c.code),
            "differs": c.code in differ,
        }
        for c in work.essay_criteria_described(markup.text)
    ]
    context: dict[str, Any] = {
        "criteria": criteria,
        "markup": markup,
        "text": markup.text,
        "editable": markup.status == MarkupStatus.DRAFT,
        "page_data": {
            "text": markup.text.text,
            "selections": markup.selections,
            "classifier": classifier_entries(markup),
            "editable": markup.status == MarkupStatus.DRAFT,
            "draft_url": reverse("markup_work_draft", args=[markup.pk]),
            "submit_url": reverse("markup_work_submit", args=[markup.pk]),
            "queue_url": reverse("markup_work"),
            "time_ms": markup.time_spent_ms,
            # The server draft's version: a copy kept in the browser is restored only on top of
            # the version it was made from (another machine's newer draft wins).
            "version": markup.updated_at.isoformat(),
        },
    }
    earlier = work.earlier_markups(markup)
    if len(earlier) == 2:
        # The third expert sees both earlier markups side by side, by number, never by name.
        compared = selectors.comparison(markup.text, earlier[0], earlier[1])
        compared["x_label"] = _("Expert 1")
        compared["y_label"] = _("Expert 2")
        context["earlier"] = compared
    return render(request, "markup/mark.html", context)


def _payload(request: HttpRequest) -> dict[str, Any]:
    if len(request.body) > MAX_BODY_BYTES:
        raise work.MarkupRefused("(body)", f"larger than {MAX_BODY_BYTES} bytes")
    try:
        # The bounded reader, the API's too (lib.jsonparser): depth, digits, NaN/Infinity and
        # syntax refused naming the limit or the position.
        data = bounded_json.loads(request.body or b"{}", max_bytes=MAX_BODY_BYTES)
    except bounded_json.JSONLimitError as error:
        raise work.MarkupRefused("(body)", str(error)) from error
    if not isinstance(data, dict):
        raise work.MarkupRefused("(body)", "a JSON object expected")
    return data


def _refusal(error: work.MarkupRefused) -> JsonResponse:
    status = 422 if error.issues else (409 if error.field == "status" else 400)
    return JsonResponse(
        {
            "error": str(error),
            "field": error.field,
            "issues": [
                {"kind": i.kind, "message": i.message, "fragment": i.fragment} for i in error.issues
            ],
        },
        status=status,
    )


@login_required
@require_POST
def markup_draft(request: HttpRequest, pk: int) -> JsonResponse:
    markup = _own_markup(request, pk)
    try:
        data = _payload(request)
        saved = work.markup_save_draft(
            markup,
            data.get("selections"),
            time_ms=data.get("time_ms", 0),
            criteria=data.get("criteria"),
            rationales=data.get("rationales"),
        )
    except work.MarkupRefused as error:
        return _refusal(error)
    return JsonResponse(
        {
            "saved": True,
            "fragments": len(saved.selections),
            "version": saved.updated_at.isoformat(),
            **_check(saved),
        }
    )


def _check(markup: Markup) -> dict[str, Any]:
    """The formula's criteria from the markup as stored, and the entered ones that differ."""
    computed, differ = work.score_check(markup)
    if computed is None:
        return {"computed": {}, "differ": {}}
    return {"computed": computed.criteria, "differ": differ, "words": computed.words}


@login_required
@require_POST
def markup_submit(request: HttpRequest, pk: int) -> JsonResponse:
    markup = _own_markup(request, pk)
    try:
        data = _payload(request)
        key = data.get("key", "")
        if not isinstance(key, str):
            raise work.MarkupRefused("key", "a string expected")
        result = work.markup_submit(
            markup,
            data.get("selections"),
            time_ms=data.get("time_ms", 0),
            key=key,
            criteria=data.get("criteria"),
            rationales=data.get("rationales"),
        )
    except work.MarkupRefused as error:
        return _refusal(error)
    return JsonResponse(
        {
            "submitted": True,
            "repeated": result.repeated,
            "fragments": len(result.markup.selections),
            "next": reverse("markup_work"),
            **_check(result.markup),
        }
    )


@login_required
@require_POST
def assign_texts(request: HttpRequest) -> HttpResponse:
    """Assign every text lacking its independent markups to a panel's experts."""
    panel = get_object_or_404(Panel, pk=_int(request.POST.get("panel")))
    require(request.user, "panels.manage_panel", panel)
    try:
        result = work.markup_assign(panel, overlap=_int(request.POST.get("overlap", "2")))
    except work.MarkupRefused as error:
        messages.error(request, str(error))
        return redirect("markup_texts")
    messages.success(
        request,
        _("%(created)d markups assigned to %(panel)s; %(short)d could not be (too few experts).")
        % {"created": result.created, "panel": str(panel), "short": result.short},
    )
    return redirect("markup_texts")


def _int(raw: Any) -> int:
    number = ascii_int(str(raw))
    return -1 if number is None else number
