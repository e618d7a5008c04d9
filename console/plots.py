"""Small server-side SVG charts for the console: no JavaScript, no CDN, readable without colour.

Every chart carries a <title> and text labels, so screen readers and tests can read the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

BAR = "#3857d6"
NA = "#98a2b3"
AXIS = "#667085"


def _svg(width: int, height: int, title: str, body: str, css_class: str) -> SafeString:
    return mark_safe(  # noqa: S308 (every label below is escaped)
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot {css_class}" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}">'
        f"<title>{escape(title)}</title>{body}</svg>"
    )


def bar_chart(
    values: Sequence[tuple[str, int]],
    *,
    title: str,
    width: int = 220,
    height: int = 120,
    css_class: str = "bars",
) -> SafeString:
    """Vertical bars with their counts on top and labels below."""
    if not values:
        return _svg(width, height, title, "", css_class)
    top = max((v for _label, v in values), default=0) or 1
    pad_top, pad_bottom = 14, 18
    plot_h = height - pad_top - pad_bottom
    slot = width / len(values)
    parts = []
    for i, (label, v) in enumerate(values):
        h = plot_h * v / top
        x = i * slot + slot * 0.15
        y = pad_top + plot_h - h
        colour = NA if label == "NA" else BAR
        parts.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" height="{h:.1f}" '
            f'fill="{colour}"><title>{escape(label)}: {v}</title></rect>'
            f'<text x="{x + slot * 0.35:.1f}" y="{y - 2:.1f}" font-size="10" '
            f'text-anchor="middle">{v}</text>'
            f'<text x="{x + slot * 0.35:.1f}" y="{height - 5}" font-size="10" '
            f'text-anchor="middle" fill="{AXIS}">{escape(label)}</text>'
        )
    return _svg(width, height, title, "".join(parts), css_class)


def score_distribution_chart(counts: dict[str, int], *, title: str) -> SafeString:
    """Scores in scale order, NA last."""
    numeric = sorted((k for k in counts if k != "NA"), key=int)
    values = [(k, counts[k]) for k in numeric]
    if "NA" in counts:
        values.append(("NA", counts["NA"]))
    return bar_chart(values, title=title, css_class="score-distribution")


def histogram_chart(counts: Sequence[int], *, title: str) -> SafeString:
    """Counts over equal bins of [0, 1] (confidence of aggregated verdicts)."""
    n = len(counts)
    labels = [f"{i / n:.1f}" for i in range(n)]
    return bar_chart(
        list(zip(labels, counts, strict=True)),
        title=title,
        width=420,
        height=140,
        css_class="confidence",
    )


def line_chart(
    series: Sequence[tuple[date, int]],
    *,
    title: str,
    width: int = 420,
    height: int = 140,
    css_class: str = "progress-line",
) -> SafeString:
    """A cumulative line over days, with the first and last dates and the last value."""
    if not series:
        return _svg(width, height, title, "", css_class)
    pad_l, pad_r, pad_t, pad_b = 8, 40, 10, 18
    top = max(v for _d, v in series) or 1
    plot_w, plot_h = width - pad_l - pad_r, height - pad_t - pad_b
    step = plot_w / max(1, len(series) - 1)
    points = " ".join(
        f"{pad_l + i * step:.1f},{pad_t + plot_h - plot_h * v / top:.1f}"
        for i, (_d, v) in enumerate(series)
    )
    first, last = series[0], series[-1]
    body = (
        f'<line x1="{pad_l}" y1="{pad_t + plot_h}" x2="{pad_l + plot_w}" y2="{pad_t + plot_h}" '
        f'stroke="{AXIS}" stroke-width="1"/>'
        f'<polyline fill="none" stroke="{BAR}" stroke-width="2" points="{points}"/>'
        f'<text x="{pad_l}" y="{height - 4}" font-size="10" fill="{AXIS}">{first[0]:%d.%m}</text>'
        f'<text x="{pad_l + plot_w}" y="{height - 4}" font-size="10" fill="{AXIS}" '
        f'text-anchor="end">{last[0]:%d.%m}</text>'
        f'<text x="{pad_l + plot_w + 4}" y="{pad_t + 10}" font-size="11">{last[1]}</text>'
    )
    return _svg(width, height, title, body, css_class)
