"""Leaderboard pages: the list, one board (filters, sort, source), and the admins' actions
(create, recompute, publish). Thin: leaderboards.services and .selectors hold the logic."""

from __future__ import annotations

import hashlib
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.views import redirect_to_login
from django.core.cache import cache
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware.csrf import get_token
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy
from django.views.decorators.http import require_GET, require_POST

from leaderboards import selectors, services, versions
from leaderboards.models import GateRule, Leaderboard, Visibility
from leaderboards.svg import bars_svg
from panels.access import allowed, require
from participants.rules import is_participant
from protocol.critical import DEFAULT_GATE_RULE, GATE_ANY
from protocol.leaderboard import REPORTED_HIGH, reported
from taxonomy.models import Complexity, TaskGroup

# A snapshot never changes: its rendered views may live long; a new snapshot has new keys. The
# shared cache (Redis in production) serves every process; the last few views are also kept in
# the process, as a hit would otherwise fetch ~100 kB per request.
BODY_CACHE_S = 3600
_BODIES: dict[str, str] = {}
_BODIES_SIZE = 64
# Stands in the cached whole page where each reader's CSRF token goes (a masked token's shape).
CSRF_PLACEHOLDER = "pollux" + "0" * 58


def _remember(key: str, html: str) -> None:
    while len(_BODIES) >= _BODIES_SIZE:
        _BODIES.pop(next(iter(_BODIES)))
    _BODIES[key] = html


class BoardForm(forms.ModelForm):
    task_groups = forms.ModelMultipleChoiceField(
        queryset=TaskGroup.objects.order_by("position"),
        required=False,
        label=gettext_lazy("Task types (none: all)"),
    )
    # Not sent: POLLUX's rule, the default (docs/leaderboards.md says why).
    gate_rule = forms.ChoiceField(
        choices=GateRule.choices,
        required=False,
        initial=DEFAULT_GATE_RULE,
        label=gettext_lazy("critical gate rule"),
    )

    class Meta:
        model = Leaderboard
        fields = ["slug", "title", "description", "task_groups", "gate_rule"]
        labels = {
            "slug": gettext_lazy("Address (Latin letters, digits, hyphens)"),
            "title": gettext_lazy("Title"),
            "description": gettext_lazy("Description"),
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # A task type by its name in the page's language (its __str__ is the English key).
        field = self.fields["task_groups"]
        field.label_from_instance = lambda group: group.name  # type: ignore[attr-defined]

    def clean_gate_rule(self) -> str:
        return str(self.cleaned_data.get("gate_rule") or DEFAULT_GATE_RULE)

    def clean_slug(self) -> str:
        slug: str = self.cleaned_data["slug"]
        if slug == "new":  # the creation route's own path
            raise forms.ValidationError(_("This name is reserved."))
        return slug


class SubmissionSettingsForm(forms.ModelForm):
    """Whether the board takes participants' submissions, and on what terms."""

    class Meta:
        model = Leaderboard
        fields = ["accepts_submissions", "judge_config", "fixed_settings", "submissions_per_day"]

    def clean_fixed_settings(self) -> dict[str, Any]:
        value = self.cleaned_data.get("fixed_settings") or {}
        problem = services.settings_problem(value)
        if problem:
            raise forms.ValidationError(problem)
        return value

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("accepts_submissions") and not data.get("judge_config"):
            self.add_error("judge_config", _("A board that takes submissions needs a judge."))
        if data.get("submissions_per_day") == 0 and data.get("accepts_submissions"):
            self.add_error("submissions_per_day", _("At least one a day."))
        return data


class RecomputeForm(forms.Form):
    """Recompute, under the gate rule chosen here (the board's, unchanged when not sent)."""

    gate_rule = forms.ChoiceField(
        choices=GateRule.choices, required=False, label=gettext_lazy("critical gate rule")
    )


class VisibilityForm(forms.Form):
    visibility = forms.ChoiceField(choices=Visibility.choices)
    reason = forms.CharField(max_length=500, required=False)


def version_number(request: HttpRequest) -> int | HttpResponse | None:
    """The `version` asked for in the query (None: the current one), or a 400 naming it."""
    text = request.GET.get("version", "").strip()
    if not text:
        return None
    if not (text.isascii() and text.isdecimal() and len(text) <= 9):
        return HttpResponse(
            _("version: a version number is expected, like 1."),
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    return int(text)


def _board_for(request: HttpRequest, slug: str) -> Leaderboard | HttpResponse:
    # One query: the board with the version shown and that version's latest snapshot's id and
    # time (the page needs no more).
    number = version_number(request)
    if isinstance(number, HttpResponse):
        return number
    board = selectors.board_with_snapshot(slug, number)
    if board is None:
        raise Http404
    if not allowed(request.user, "leaderboards.view_leaderboard", board):
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        require(request.user, "leaderboards.view_leaderboard", board)
    if number is not None and getattr(board, "version_id", None) is None:
        raise Http404  # the board has no version of that number
    return board


def _list(request: HttpRequest, form: BoardForm | None = None, status: int = 200) -> HttpResponse:
    boards = [
        b
        for b in Leaderboard.objects.order_by("title")
        if allowed(request.user, "leaderboards.view_leaderboard", b)
    ]
    manage = allowed(request.user, "leaderboards.manage_leaderboards")
    context = {"boards": boards, "form": form or (BoardForm() if manage else None)}
    return render(request, "leaderboards/list.html", context, status=status)


@require_GET
def board_list(request: HttpRequest) -> HttpResponse:
    return _list(request)


@login_required
@require_POST
def board_create(request: HttpRequest) -> HttpResponse:
    require(request.user, "leaderboards.manage_leaderboards")
    form = BoardForm(request.POST)
    if not form.is_valid():
        return _list(request, form, status=400)
    board = form.save()
    versions.version_cut(board, actor=request.user)
    services.snapshot_queue(board, request.user)
    return redirect("leaderboard", slug=board.slug)


def _whole_page_key(request: HttpRequest, snapshot: int | None) -> str:
    """The cache key of the whole page for a reader who sees what every anonymous reader sees:
    not logged in, no message waiting (no session, no message cookie). "" otherwise."""
    if snapshot is None or request.user.is_authenticated:
        return ""
    if "messages" in request.COOKIES or settings.SESSION_COOKIE_NAME in request.COOKIES:
        return ""
    query = request.META.get("QUERY_STRING", "")
    if len(query) > 300:  # a forged query: not worth a cache entry
        return ""
    digest = hashlib.sha1(query.encode(), usedforsecurity=False).hexdigest()
    return f"leaderboard-page:{snapshot}:{request.LANGUAGE_CODE}:{digest}"


def _cached(key: str) -> str | None:
    """A rendered view from the process, else from the shared cache (then kept here too)."""
    html = _BODIES.get(key)
    if html is None:
        html = cache.get(key)
        if html is not None:
            _remember(key, html)
    return html


def _store(key: str, html: str) -> None:
    cache.set(key, html, BODY_CACHE_S)
    _remember(key, html)


@require_GET
def board_page(request: HttpRequest, slug: str) -> HttpResponse:
    found = _board_for(request, slug)
    if isinstance(found, HttpResponse):
        return found
    board = found
    # Annotated by _board_for: the latest snapshot's id and time.
    snapshot: int | None = getattr(board, "snapshot_id", None)
    # An anonymous reader of a public board gets the page rendered once per snapshot, language
    # and query, with his own CSRF token put in (the language form's and htmx's): the access
    # check above runs on every request, so a board made private stops being served at once.
    whole = _whole_page_key(request, snapshot)
    if whole:
        html = _cached(whole)
        if html is None:
            html = _board_response(request, board, snapshot, CSRF_PLACEHOLDER).content.decode()
            _store(whole, html)
        return HttpResponse(html.replace(CSRF_PLACEHOLDER, get_token(request)))
    return _board_response(request, board, snapshot)


def _board_response(
    request: HttpRequest, board: Leaderboard, snapshot: int | None, csrf: str | None = None
) -> HttpResponse:
    get = request.GET
    filters = selectors.Filters(
        group=get.get("group", ""),
        criterion=get.get("criterion", ""),
        complexity=get.get("complexity", ""),
        style=get.get("style", ""),
    )
    sort = get.get("sort", "score")
    if not selectors.sort_ok(sort):
        sort = "score"
    manage = allowed(request.user, "leaderboards.manage_leaderboards")
    context = {
        "board": board,
        "snapshot_at": getattr(board, "snapshot_at", None),
        "body": _body(request, board, snapshot, filters, sort) if snapshot else "",
        "manage": manage,
        "visibility_form": VisibilityForm(initial={"visibility": board.visibility})
        if manage
        else None,
        "changes": board.changes.select_related("actor")[:10] if manage else [],
        "settings_form": SubmissionSettingsForm(instance=board) if manage else None,
        "recompute_form": RecomputeForm(initial={"gate_rule": board.gate_rule}) if manage else None,
        "may_submit": board.accepts_submissions and is_participant(request.user),
        "version_number": getattr(board, "version_number", None),
        "version_numbers": list(
            board.versions.order_by("-number").values_list("number", flat=True)
        ),
    }
    if csrf is not None:
        # Rendered for the whole-page cache: a placeholder where each reader's token goes.
        context["csrf_token"] = csrf
    return render(request, "leaderboards/board.html", context)


def _body(
    request: HttpRequest,
    board: Leaderboard,
    snapshot: int,
    filters: selectors.Filters,
    sort: str,
) -> str:
    """The filters, the table and the comparison form: the same for every reader of a snapshot
    (no CSRF token, no user in it), so rendered once per view and language and then cached."""
    source = request.GET.get("source", services.EXPERTS)
    key = "leaderboard:" + ":".join(
        [
            str(snapshot),
            str(getattr(board, "version_number", "")),
            request.LANGUAGE_CODE,
            source,
            filters.group,
            filters.criterion,
            filters.complexity,
            filters.style,
            sort,
        ]
    )
    if len(key) > 200:  # a forged query: not worth a cache entry
        key = ""
    cached = _cached(key) if key else None
    if cached is not None:
        return mark_safe(cached)  # noqa: S308 (our own rendering, stored as rendered)
    data = selectors.snapshot_data(snapshot)  # only on a miss: a hit needs no data
    view = selectors.table(data, source, filters, sort)
    # A snapshot from before the setting was computed with "any vote".
    rule = data.get("gate_rule", GATE_ANY)
    context = {
        "board": board,
        "view": view,
        "gate_rule_label": GateRule(rule).label if rule in GateRule.values else rule,
        "filters": filters,
        "sort": sort,
        "sources": [(s["key"], s["kind"], s["name"]) for s in data.get("sources", [])],
        "models": sorted(
            ((k, v["name"]) for k, v in data.get("models", {}).items()), key=lambda kv: kv[1]
        ),
        "group_choices": selectors.choices(data.get("groups", {})),
        "criterion_choices": selectors.choices(data.get("criteria", {})),
        "style_choices": selectors.choices(data.get("styles", {})),
        "complexity_choices": Complexity.choices,
    }
    html = render_to_string("leaderboards/_board_body.html", context, request=request)
    if key:
        _store(key, html)
    return mark_safe(html)  # noqa: S308 (a template's own rendering)


@login_required
@require_POST
def board_refresh(request: HttpRequest, slug: str) -> HttpResponse:
    require(request.user, "leaderboards.manage_leaderboards")
    board = get_object_or_404(Leaderboard, slug=slug)
    form = RecomputeForm(request.POST)
    if not form.is_valid():
        return HttpResponse(
            _("gate_rule: choose one of %s.") % ", ".join(GateRule.values),
            status=400,
            content_type="text/plain; charset=utf-8",
        )
    rule = form.cleaned_data["gate_rule"]
    if rule and rule != board.gate_rule:
        board.gate_rule = rule
        board.save(update_fields=["gate_rule"])
        if versions.version_latest(board) is not None:
            # A version's rule is frozen: the new rule is the next version's.
            messages.info(
                request, _("The new rule applies from the next version: cut it to rank under it.")
            )
    try:
        version = versions.version_pick(board, request.POST.get("version"))
    except ValueError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    if version is None:
        raise Http404
    _job, queued = services.snapshot_queue(board, request.user, version=version)
    if queued:
        messages.info(request, _("The leaderboard is being recomputed."))
    else:
        messages.info(request, _("The leaderboard is already being recomputed."))
    return redirect(f"{reverse('leaderboard', args=[board.slug])}?version={version.number}")


@login_required
@require_POST
def board_visibility(request: HttpRequest, slug: str) -> HttpResponse:
    require(request.user, "leaderboards.manage_leaderboards")
    board = get_object_or_404(Leaderboard, slug=slug)
    form = VisibilityForm(request.POST)
    if not form.is_valid():
        return HttpResponse(_("Choose private, internal or public."), status=400)
    changed = services.visibility_set(
        board,
        form.cleaned_data["visibility"],
        actor=request.user,
        reason=form.cleaned_data["reason"],
    )
    if changed:
        messages.success(request, _("Visibility: %s.") % board.get_visibility_display())
    return redirect("leaderboard", slug=board.slug)


@login_required
@require_POST
def board_submission_settings(request: HttpRequest, slug: str) -> HttpResponse:
    require(request.user, "leaderboards.manage_leaderboards")
    board = get_object_or_404(Leaderboard, slug=slug)
    form = SubmissionSettingsForm(request.POST, instance=board)
    if not form.is_valid():
        errors = "; ".join(f"{field}: {' '.join(map(str, e))}" for field, e in form.errors.items())
        return HttpResponse(errors, status=400, content_type="text/plain; charset=utf-8")
    form.save()
    # A version that scored nothing yet takes the judge; otherwise it is the next version's.
    versions.version_adopt_settings(board)
    messages.success(request, _("Submission settings saved."))
    return redirect("leaderboard", slug=board.slug)


def _snapshot_source(request: HttpRequest, board: Leaderboard) -> tuple[dict[str, Any], Any]:
    """The data of the board's latest snapshot (annotated by _board_for) and the source asked
    for; 404 before the first snapshot."""
    snapshot: int | None = getattr(board, "snapshot_id", None)
    data = selectors.snapshot_data(snapshot) if snapshot else {}
    source = selectors.source_of(data, request.GET.get("source", services.EXPERTS))
    if source is None:
        raise Http404
    return data, source


@require_GET
def model_page(request: HttpRequest, slug: str, model: int) -> HttpResponse:
    """One model: its profile across task types, its strongest and weakest criteria."""
    found = _board_for(request, slug)
    if isinstance(found, HttpResponse):
        return found
    data, source = _snapshot_source(request, found)
    shown = selectors.profile(data, source, str(model))
    if shown is None:
        raise Http404
    chart = bars_svg(
        [name for name, _v in shown["groups"]],
        [[None if v is None else reported(v) for _n, v in shown["groups"]]],
        shown["name"],
        top=REPORTED_HIGH,
    )
    context = {"board": found, "source": source, "shown": shown}
    return render(request, "leaderboards/model.html", {**context, "chart": chart})


@require_GET
def compare_page(request: HttpRequest, slug: str) -> HttpResponse:
    """Two models side by side, per task type and per criterion."""
    found = _board_for(request, slug)
    if isinstance(found, HttpResponse):
        return found
    data, source = _snapshot_source(request, found)
    shown = selectors.comparison(data, source, request.GET.get("a", ""), request.GET.get("b", ""))
    if shown is None:
        raise Http404
    chart = bars_svg(
        [name for name, *_rest in shown["groups"]],
        [
            [None if x is None else reported(x) for _n, x, _y, _d in shown["groups"]],
            [None if y is None else reported(y) for _n, _x, y, _d in shown["groups"]],
        ],
        f"{shown['name_a']} / {shown['name_b']}",
        top=REPORTED_HIGH,
    )
    context = {"board": found, "source": source, "shown": shown}
    return render(request, "leaderboards/compare.html", {**context, "chart": chart})
