"""Pages of instruction writing: the writer's home (slots, queues), a slot's page (authoring
form, review, editorial step, originality verdict, history and diffs), the campaign's dashboard
and plan, reference corpora, the export. Thin: rules ask who, services do."""

from __future__ import annotations

import difflib
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from authoring import baseline, exports, selectors, services
from authoring.corpora import corpora_list, corpus_from_upload
from authoring.models import BaselineAnswer, Campaign, Slot, SlotState
from lib import bounded_json
from lib.integers import ascii_int
from lib.numbers import decimal_number
from panels.access import allowed, get_object_for, require
from panels.models import Panel
from protocol import authoring as rules
from taxonomy.models import Complexity, FunctionalStyle, Task


def _int(value: Any) -> int | None:
    number = ascii_int(str(value)) if value is not None else None
    return number if number is not None and 0 < number < 2**31 else None


def _slot(request: HttpRequest, pk: int, perm: str) -> Slot:
    return get_object_for(
        request.user,
        perm,
        Slot.objects.select_related("campaign", "panel", "task", "task__group", "author"),
        role="authoring.view_writing",
        pk=pk,
    )


def _campaign(request: HttpRequest, pk: int, perm: str) -> Campaign:
    require(request.user, perm)
    campaign = Campaign.objects.filter(pk=pk).first()
    if campaign is None:
        raise Http404
    return campaign


# A verdict refused for what was typed in its form comes back in that form (the slot page).
FORM_FIELDS = ("comment", "verdict")


def _refused(request: HttpRequest, exc: services.AuthoringError, back: str) -> HttpResponse:
    if request.headers.get("Accept", "").startswith("application/json"):
        errors = getattr(exc, "errors", None) or {exc.field or "__all__": str(exc)}
        return JsonResponse({"ok": False, "errors": errors}, status=exc.status)
    # The page names the field and the reason; the status says the action was refused.
    return render(
        request,
        "refused.html",
        {"message": str(exc), "field": exc.field, "back": back},
        status=exc.status,
    )


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    require(request.user, "authoring.view_writing")
    expert = getattr(request.user, "expert", None)
    campaigns = list(Campaign.objects.all())
    open_by_campaign = []
    if expert is not None:
        for campaign in campaigns:
            slots = services.open_slots(campaign, expert)
            if slots:
                open_by_campaign.append((campaign, slots))
    context = {
        "campaigns": campaigns,
        "expert": expert,
        "mine": selectors.my_slots(expert) if expert else [],
        "open_by_campaign": open_by_campaign,
        "review": selectors.review_queue(expert) if expert else [],
        "editing": selectors.editing_queue(expert) if expert else [],
        "originality": selectors.originality_queue(request.user),
        "can_dashboard": allowed(request.user, "authoring.view_dashboard"),
        "can_manage": allowed(request.user, "authoring.manage_plan"),
        "baseline": (
            BaselineAnswer.objects.filter(expert=expert).select_related("instruction")
            if expert
            else []
        ),
        # Each panel with whether it has writers: a panel without one is shown without the
        # form (its sample would be refused).
        "sample_panels": [
            (p, bool(baseline.panel_writers(p)))
            for p in Panel.objects.order_by("number")
            if allowed(request.user, "authoring.sample_baseline", p)
        ],
    }
    return render(request, "authoring/home.html", context)


@login_required
@require_POST
def campaign_create(request: HttpRequest) -> HttpResponse:
    require(request.user, "authoring.manage_plan")
    share = decimal_number(request.POST.get("double_review_share", "") or 0.1)
    if share is None:
        share = -1.0  # refused by the service with the field's range
    try:
        campaign = services.campaign_create(
            name=request.POST.get("name", ""), user=request.user, double_review_share=share
        )
    except services.AuthoringError as exc:
        return _refused(request, exc, reverse("authoring_home"))
    return redirect("authoring_dashboard", campaign.pk)


@login_required
@require_GET
def dashboard(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk, "authoring.view_dashboard")
    plan = services.current_plan(campaign)
    return render(
        request,
        "authoring/dashboard.html",
        {
            "campaign": campaign,
            "plan": plan,
            "plans": campaign.plans.all()[:20],
            "rows": selectors.dashboard(campaign, request.user),
            "returns": selectors.return_rate(campaign, request.user),
            "agreement": selectors.reviewer_agreement(campaign, request.user),
            "time": selectors.writing_time(campaign, request.user),
            "levels": rules.COMPLEXITIES,
            "can_manage": allowed(request.user, "authoring.manage_plan"),
        },
    )


@login_required
@require_http_methods(["GET", "POST"])
def plan_edit(request: HttpRequest, pk: int) -> HttpResponse:
    campaign = _campaign(request, pk, "authoring.manage_plan")
    entries = services.plan_entries(services.current_plan(campaign))
    owned = [
        (panel, group)
        for panel in Panel.objects.prefetch_related("tasks").order_by("number")
        for group in panel.tasks.filter(level=0).order_by("position")
    ]
    if request.method == "POST":
        changed: dict[tuple[int, int], dict[str, int]] = {}
        for panel, group in owned:
            counts: dict[str, Any] = {}
            for level in rules.COMPLEXITIES:
                raw = request.POST.get(f"quota-{panel.pk}-{group.pk}-{level}")
                if raw is None:
                    continue
                # Not ASCII digits: passed on as typed, for the plan's check to name the cell.
                number = ascii_int(raw)
                counts[level] = raw if number is None else number
            if counts:
                current = entries.get((panel.pk, group.pk), {})
                merged = {lv: counts.get(lv, current.get(lv, 0)) for lv in rules.COMPLEXITIES}
                if merged != {lv: current.get(lv, 0) for lv in rules.COMPLEXITIES}:
                    changed[(panel.pk, group.pk)] = merged
        try:
            if changed:
                services.plan_save(
                    campaign=campaign,
                    entries=changed,
                    note=request.POST.get("note", ""),
                    user=request.user,
                )
        except services.AuthoringError as exc:
            return _refused(request, exc, reverse("authoring_plan", args=[pk]))
        return redirect("authoring_dashboard", pk)
    rows = [
        (
            panel,
            group,
            [(lv, entries.get((panel.pk, group.pk), {}).get(lv, 0)) for lv in rules.COMPLEXITIES],
        )
        for panel, group in owned
    ]
    return render(
        request,
        "authoring/plan.html",
        {"campaign": campaign, "rows": rows, "levels": rules.COMPLEXITIES},
    )


@login_required
@require_POST
def slot_take(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "authoring.view_writing")
    campaign = Campaign.objects.filter(pk=pk).first()
    expert = getattr(request.user, "expert", None)
    if campaign is None or expert is None:
        raise Http404
    panel_id, task_id = _int(request.POST.get("panel")), _int(request.POST.get("task"))
    panel = Panel.objects.filter(pk=panel_id).first() if panel_id else None
    task = Task.objects.filter(pk=task_id, is_leaf=True).first() if task_id else None
    complexity = request.POST.get("complexity", "")
    if panel is None or task is None or complexity not in Complexity.values:
        return _refused(
            request,
            services.AuthoringError(_("Choose a slot of the plan."), "slot"),
            reverse("authoring_home"),
        )
    try:
        slot = services.slot_take(
            campaign=campaign, expert=expert, panel=panel, task=task, complexity=complexity
        )
    except services.AuthoringError as exc:
        return _refused(request, exc, reverse("authoring_home"))
    return redirect("authoring_slot", slot.pk)


def _revisions_with_diffs(slot: Slot) -> list[dict[str, Any]]:
    out = []
    previous = ""
    for revision in slot.revisions.select_related("by").order_by("number"):
        out.append({"revision": revision, "changed": revision.text != previous})
        previous = revision.text
    return out


@login_required
@require_GET
def slot_page(request: HttpRequest, pk: int) -> HttpResponse:
    return _slot_page(request, _slot(request, pk, "authoring.view_slot"))


def _slot_page(
    request: HttpRequest,
    slot: Slot,
    *,
    refused: tuple[str, services.AuthoringError] | None = None,
) -> HttpResponse:
    """The slot page; `refused` = (form id, error) puts a refused review or originality verdict
    back in its form with the reason and the comment typed (not a page that leads nowhere)."""
    user = request.user
    is_author = allowed(user, "authoring.write_slot", slot)
    can_review = allowed(user, "authoring.review_slot", slot)
    can_edit = allowed(user, "authoring.edit_slot", slot)
    can_judge = allowed(user, "authoring.judge_originality", slot)
    check = slot.checks.order_by("-pk").first() if (can_judge or can_edit) else None
    # An author sees the reviewers' comments but not who wrote them; the author and the
    # reviewers are named only to those authoring.see_author allows (blind review).
    reviews = list(slot.reviews.select_related("reviewer").order_by("round", "created_at"))
    return render(
        request,
        "authoring/slot.html",
        {
            "slot": slot,
            "is_author": is_author,
            "can_review": can_review and slot.state == SlotState.SUBMITTED,
            "can_edit": can_edit and slot.state == SlotState.EDITING,
            "can_judge": can_judge and slot.state == SlotState.ORIGINALITY,
            "show_people": allowed(user, "authoring.see_author", slot),
            "check": check,
            "reviews": reviews,
            "events": slot.events.select_related("by").order_by("at", "pk"),
            "revisions": _revisions_with_diffs(slot),
            "styles": FunctionalStyle.objects.order_by("name_en"),
            "devices": [
                (key, en, ru, slot.devices.get(key, 0)) for key, en, ru in rules.STYLISTIC_DEVICES
            ],
            "level_text": (slot.task.complexity or {}).get(slot.complexity, {}),
            "expected_minutes": rules.expected_minutes(slot.text),
            "refused_form": refused[0] if refused else "",
            "refused_message": str(refused[1]) if refused else "",
            "refused_comment": request.POST.get("comment", "") if refused else "",
        },
        status=refused[1].status if refused else 200,
    )


def _json_or_post(request: HttpRequest) -> dict[str, Any]:
    if request.content_type == "application/json":
        try:
            # The bounded reader: a body nested 50,000 deep was a RecursionError (a 500), one
            # with a 5,000-digit number "not JSON"; each is now refused naming its limit. Django
            # has read at most DATA_UPLOAD_MAX_MEMORY_SIZE bytes into request.body.
            data = bounded_json.loads(
                request.body or b"{}", max_bytes=settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            )
        except bounded_json.JSONLimitError as error:
            raise services.DraftInvalid({"__all__": str(error)}) from None
        if not isinstance(data, dict):
            raise services.DraftInvalid({"__all__": _("the body must be a JSON object")})
        devices = data.pop("devices", None)
        out = rules.draft_fields(data)
        if devices is not None:
            out["devices"] = devices
        return out
    return rules.draft_fields(request.POST)


@login_required
@require_POST
def slot_save(request: HttpRequest, pk: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.write_slot")
    try:
        slot = services.draft_save(slot=slot, values=_json_or_post(request), user=request.user)
    except services.AuthoringError as exc:
        errors = getattr(exc, "errors", None) or {exc.field or "__all__": str(exc)}
        return JsonResponse({"ok": False, "errors": errors}, status=exc.status)
    return JsonResponse(
        {"ok": True, "saved_at": slot.saved_at.isoformat(), "seconds_spent": slot.seconds_spent}
    )


@login_required
@require_POST
def slot_submit(request: HttpRequest, pk: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.write_slot")
    back = reverse("authoring_slot", args=[pk])
    try:
        services.slot_submit(slot=slot, values=_json_or_post(request), user=request.user)
    except services.AuthoringError as exc:
        return _refused(request, exc, back)
    messages.success(request, _("Submitted for review."))
    return redirect(back)


@login_required
@require_POST
def slot_release(request: HttpRequest, pk: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.write_slot")
    try:
        services.slot_release(slot=slot, user=request.user)
    except services.AuthoringError as exc:
        return _refused(request, exc, reverse("authoring_slot", args=[pk]))
    return redirect("authoring_home")


@login_required
@require_POST
def slot_review(request: HttpRequest, pk: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.review_slot")
    back = reverse("authoring_slot", args=[pk])
    expert = getattr(request.user, "expert", None)
    if expert is None:
        raise Http404
    try:
        services.review_submit(
            slot=slot,
            reviewer=expert,
            verdict=request.POST.get("verdict", ""),
            comment=request.POST.get("comment", ""),
            user=request.user,
        )
    except services.AuthoringError as exc:
        if exc.field not in FORM_FIELDS or request.headers.get("Accept", "").startswith(
            "application/json"
        ):
            return _refused(request, exc, back)
        return _slot_page(request, slot, refused=("review-form", exc))
    messages.success(request, _("Review saved."))
    return redirect("authoring_home")


@login_required
@require_POST
def slot_edit(request: HttpRequest, pk: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.edit_slot")
    back = reverse("authoring_slot", args=[pk])
    try:
        services.editor_save(
            slot=slot,
            text=request.POST.get("text", ""),
            reference_answer=request.POST.get("reference_answer", slot.reference_answer),
            note=request.POST.get("note", ""),
            user=request.user,
        )
        if request.POST.get("done"):
            services.editor_done(slot=slot, user=request.user)
    except services.AuthoringError as exc:
        return _refused(request, exc, back)
    return redirect(back)


@login_required
@require_POST
def slot_recheck(request: HttpRequest, pk: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.judge_originality")
    try:
        services.originality_request(slot=slot, user=request.user)
    except services.AuthoringError as exc:
        return _refused(request, exc, reverse("authoring_slot", args=[pk]))
    return redirect("authoring_slot", pk)


@login_required
@require_POST
def slot_originality(request: HttpRequest, pk: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.judge_originality")
    back = reverse("authoring_slot", args=[pk])
    try:
        services.originality_verdict(
            slot=slot,
            verdict=request.POST.get("verdict", ""),
            comment=request.POST.get("comment", ""),
            user=request.user,
        )
    except services.AuthoringError as exc:
        if exc.field not in FORM_FIELDS or request.headers.get("Accept", "").startswith(
            "application/json"
        ):
            return _refused(request, exc, back)
        return _slot_page(request, slot, refused=("originality-form", exc))
    return redirect(back)


@login_required
@require_GET
def revision_diff(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    slot = _slot(request, pk, "authoring.view_slot")
    revisions = {r.number: r for r in slot.revisions.filter(number__in=(number - 1, number))}
    current = revisions.get(number)
    if current is None:
        raise Http404
    before = revisions.get(number - 1)
    diff = difflib.HtmlDiff(wrapcolumn=80).make_table(
        (before.text if before else "").splitlines(),
        current.text.splitlines(),
        _("Revision %d") % (number - 1) if before else _("(nothing)"),
        _("Revision %d") % number,
        context=True,
        numlines=2,
    )
    return render(
        request,
        "authoring/diff.html",
        {"slot": slot, "revision": current, "before": before, "diff": diff},
    )


@login_required
@require_http_methods(["GET", "POST"])
def corpora(request: HttpRequest) -> HttpResponse:
    require(request.user, "authoring.manage_plan")
    if request.method == "POST":
        try:
            corpus = corpus_from_upload(
                name=request.POST.get("name", ""),
                upload=request.FILES.get("file"),
                user=request.user,
            )
        except services.AuthoringError as exc:
            return _refused(request, exc, reverse("authoring_corpora"))
        messages.success(
            request,
            _("Corpus %(name)s: %(n)d texts.")
            % {
                "name": corpus.name,
                "n": corpus.texts.count(),
            },
        )
        return redirect("authoring_corpora")
    return render(request, "authoring/corpora.html", {"corpora": corpora_list()})


@login_required
@require_GET
def export(request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
    campaign = _campaign(request, pk, "authoring.view_dashboard")
    if fmt not in ("xlsx", "jsonl"):
        raise Http404
    body, content_type = exports.instructions_file(campaign, request.user, fmt)
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="instructions-{campaign.pk}.{fmt}"'
    return response


# --- the human baseline -------------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def baseline_answer(request: HttpRequest, pk: int) -> HttpResponse:
    item = get_object_for(
        request.user,
        "authoring.write_baseline",
        BaselineAnswer.objects.select_related("instruction", "instruction__task", "expert"),
        role="authoring.view_writing",
        pk=pk,
    )
    if request.method == "POST":
        try:
            baseline.baseline_save(
                item=item,
                text=request.POST.get("text", ""),
                submit=bool(request.POST.get("submit")),
                user=request.user,
            )
        except services.AuthoringError as exc:
            return _refused(request, exc, reverse("authoring_baseline", args=[pk]))
        return redirect("authoring_baseline", pk)
    return render(request, "authoring/baseline.html", {"item": item})


@login_required
@require_POST
def baseline_sample(request: HttpRequest, pk: int) -> HttpResponse:
    panel = get_object_for(
        request.user, "authoring.sample_baseline", Panel, role="panels.view_console", pk=pk
    )
    back = reverse("authoring_home")
    size = _int(request.POST.get("size"))
    try:
        made = baseline.baseline_sample(
            panel=panel, size=size if size is not None else -1, user=request.user
        )
    except services.AuthoringError as exc:
        return _refused(request, exc, back)
    messages.success(request, _("%d instructions given to the panel's writers.") % len(made))
    return redirect(back)
