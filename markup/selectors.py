"""What the markup pages show: texts with their markups and the algorithm's accuracy, and two
markups of one text side by side (the text with each markup's fragments highlighted, the
fragments matched by the optimal correspondence numbered alike, M2–M6 both ways)."""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Prefetch, QuerySet
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from markup.models import Markup, MarkupSource, MarkupStatus, MarkupText
from markup.services import markup_document
from markup.work import divergence_reasons, independent_agreement, independent_pair, score_check
from protocol.spans import (
    METRICS,
    Fragment,
    PairAccuracy,
    normalize_code,
    pair_accuracy,
    text_accuracy,
)

FIX_CODE = normalize_code("ИСП")


def fragment_kind(f: Fragment) -> str:
    """The highlight's colour: an ИСП fix, a meaning block or an error."""
    if normalize_code(f.code) == FIX_CODE:
        return "fix"
    return "meaning" if f.group == "meaning" else "error"


@dataclass(frozen=True)
class FragmentView:
    index: int
    fragment: Fragment
    kind: str
    number: int | None  # the pair's number when matched (the same on both sides)
    anchor: str  # this fragment's id in the page
    partner: str  # the matched fragment's id on the other side, "" when unmatched

    @property
    def title(self) -> str:
        f = self.fragment
        parts = [f.code + (f".{f.subtype}" if f.subtype else "")]
        if f.comment:
            parts.append(f.comment)
        if f.correction:
            parts.append(f"→ {f.correction}")
        return " ".join(parts)

    @property
    def text_span(self) -> str:
        f = self.fragment
        return "" if f.start is None else f"{f.start}–{f.end}"


def _views(
    fragments: list[Fragment], side: str, other: str, numbers: dict[int, int]
) -> list[FragmentView]:
    out = []
    for i, f in enumerate(fragments):
        number = numbers.get(i)
        out.append(
            FragmentView(
                index=i,
                fragment=f,
                kind=fragment_kind(f),
                number=number,
                # Matched fragments are anchored by pair number, so a badge links to its partner.
                anchor=f"{side}-f{i}" if number is None else f"{side}-p{number}",
                partner="" if number is None else f"{other}-p{number}",
            )
        )
    return out


def _open_tag(view: FragmentView) -> str:
    state = "matched" if view.number is not None else "unmatched"
    badge = (
        f'<a class="span-badge" href="#{escape(view.partner)}">{view.number}</a>'
        if view.number is not None
        else '<span class="span-badge">×</span>'
    )
    return (
        f'<mark class="span span-{view.kind} span-{state}" id="{escape(view.anchor)}" '
        f'title="{escape(view.title)}">{badge}'
    )


def render_text(text: str, views: list[FragmentView]) -> SafeString:
    """The text, escaped, with every located fragment wrapped in a <mark>. Fragments nest and
    never cross (validated on saving), so opening the longer of two at one start first and
    closing at each end in stack order gives balanced tags."""
    located = [v for v in views if v.fragment.start is not None]
    starts: dict[int, list[FragmentView]] = {}
    for v in located:
        assert v.fragment.start is not None
        starts.setdefault(v.fragment.start, []).append(v)
    for group in starts.values():
        group.sort(key=lambda v: (-(v.fragment.end or 0), v.index))
    points = sorted(
        {0, len(text)}
        | {v.fragment.start or 0 for v in located}
        | {v.fragment.end or 0 for v in located}
    )
    out: list[str] = []
    stack: list[int] = []  # the ends of the open marks
    for a, b in itertools.pairwise(points):
        while stack and stack[-1] <= a:
            stack.pop()
            out.append("</mark>")
        for v in starts.get(a, []):
            out.append(_open_tag(v))
            stack.append(v.fragment.end or 0)
        out.append(str(escape(text[a:b])))
    out.extend("</mark>" for _ in stack)
    return mark_safe("".join(out))  # noqa: S308 - every piece of text above is escaped


def markup_label(markup: Markup) -> str:
    return f"#{markup.pk} {markup.author} ({markup.get_source_display()})"


def comparison(text: MarkupText, x: Markup, y: Markup) -> dict[str, Any]:
    """The page's context for markups X and Y of `text`: both renderings with the pairs of the
    optimal correspondence of M(X, Y) numbered alike, and M2–M6 and M both ways."""
    xs = list(markup_document(x).fragments)
    ys = list(markup_document(y).fragments)
    xy = pair_accuracy(xs, ys, text.text)
    yx = pair_accuracy(ys, xs, text.text)
    # Pairs numbered in the order of X's fragments.
    ordered = sorted(xy.pairs)
    x_numbers = {i: n for n, (i, _k) in enumerate(ordered, start=1)}
    y_numbers = {k: n for n, (_i, k) in enumerate(ordered, start=1)}
    x_views = _views(xs, "x", "y", x_numbers)
    y_views = _views(ys, "y", "x", y_numbers)
    return {
        "x": x,
        "y": y,
        "x_label": markup_label(x),
        "y_label": markup_label(y),
        "x_html": render_text(text.text, x_views),
        "y_html": render_text(text.text, y_views),
        "x_fragments": x_views,
        "y_fragments": y_views,
        "x_whole": [v for v in x_views if v.fragment.start is None],
        "y_whole": [v for v in y_views if v.fragment.start is None],
        "metrics": metric_rows(xy, yx),
        "xy": xy,
        "yx": yx,
        "matched": len(ordered),
    }


def metric_rows(xy: PairAccuracy, yx: PairAccuracy) -> list[tuple[str, float, float]]:
    rows = [(name, xy.metrics[name], yx.metrics[name]) for name in METRICS]
    rows.append(("M", xy.value, yx.value))
    return rows


@dataclass(frozen=True)
class TextRow:
    text: MarkupText
    markups: list[Markup]
    # (algorithmic markup, [(expert markup, M(A, E))], M_опт, M_ср) per algorithmic markup.
    accuracy: list[tuple[Markup, list[tuple[Markup, float]], float | None, float | None]]
    # The lower of M(X, Y) and M(Y, X) of the first two submitted independent expert markups
    # (markup.work), and whether it is below the threshold that calls a third expert.
    agreement: float | None = None
    reasons: list[str] = field(default_factory=list)  # why a third markup is needed
    # Per expert markup with criterion scores: the criteria entered unlike the formula computes
    # them from its own fragments (criterion → computed value).
    score_flags: dict[int, dict[str, int]] = field(default_factory=dict)

    @property
    def divergent(self) -> bool:
        return bool(self.reasons)


def text_rows(
    texts: Iterable[MarkupText] | None = None, *, markups: QuerySet[Markup] | None = None
) -> list[TextRow]:
    """The texts (default: every text) with their markups and, for each submitted algorithmic
    markup, M(A, E) per submitted expert markup and the relative accuracies (when the text has
    expert markups). The page passes one page of texts: the metrics are computed per request.

    `markups`: the markups the viewer may read (markup.rules.visible_markups; default: all).
    Only those are listed and measured, and the independent markups' agreement is shown only
    when the viewer may read both."""
    if texts is None:
        texts = MarkupText.objects.order_by("external_id")
    ids = [t.pk for t in texts]
    shown = Markup.objects.all() if markups is None else markups
    loaded = MarkupText.objects.filter(pk__in=ids).prefetch_related(
        Prefetch(
            "markups",
            queryset=shown.select_related("panel").order_by("pk"),
            to_attr="shown_markups",
        )
    )
    order = {pk: k for k, pk in enumerate(ids)}
    rows = []
    for text in sorted(loaded, key=lambda t: order[t.pk]):
        markups_of_text: list[Markup] = text.shown_markups
        readable = {m.pk for m in markups_of_text}
        pair_shown = {m.pk for m in independent_pair(text)} <= readable
        # Accuracy is of finished markups only: a draft is work in progress.
        done = [m for m in markups_of_text if m.status == MarkupStatus.SUBMITTED]
        experts = [m for m in done if m.source == MarkupSource.EXPERT]
        accuracy = []
        if experts:
            expert_fragments = [list(markup_document(m).fragments) for m in experts]
            for algorithm in (m for m in done if m.source == MarkupSource.ALGORITHM):
                result = text_accuracy(
                    list(markup_document(algorithm).fragments), expert_fragments, text.text
                )
                against = list(zip(experts, result.against_experts, strict=True))
                accuracy.append((algorithm, against, result.optimistic, result.mean))
        flags = {}
        for m in experts:
            if m.criteria:
                _computed, differ = score_check(m)
                if differ:
                    flags[m.pk] = differ
        rows.append(
            TextRow(
                text,
                markups_of_text,
                accuracy,
                independent_agreement(text) if pair_shown else None,
                divergence_reasons(text) if pair_shown else [],
                flags,
            )
        )
    return rows
