"""Server-side SVG (no JavaScript, no CDN): one system's ratings with their 95 % intervals."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

ROW = 22
LEFT = 190
PLOT = 360
RIGHT = 60
TOP = 24
BOTTOM = 26


@dataclass(frozen=True)
class Point:
    label: str
    mean: float | None
    low: float | None
    high: float | None


def _fmt(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def interval_svg(points: Sequence[Point], title: str) -> SafeString:
    """Rows best first: the mean as a dot, the interval as a bar; a value that is not finite
    (a Bradley–Terry rating of a model without a win or tie: None) is drawn at the left edge
    as an open circle. The axis spans every finite value shown, with its ends labelled."""
    values = [v for p in points for v in (p.mean, p.low, p.high) if v is not None]
    lo, hi = (min(values), max(values)) if values else (0.0, 1.0)
    if hi - lo < 1e-9:
        lo, hi = lo - 1.0, hi + 1.0

    def x(value: float) -> float:
        return LEFT + (value - lo) / (hi - lo) * PLOT

    width = LEFT + PLOT + RIGHT
    height = TOP + len(points) * ROW + BOTTOM
    axis_y = TOP + len(points) * ROW + 4
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="intervals" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{LEFT}" y="14" font-size="12" font-weight="bold">{escape(title)}</text>',
        f'<line x1="{LEFT}" y1="{axis_y}" x2="{LEFT + PLOT}" y2="{axis_y}" stroke="#9aa3b2"/>',
        f'<text x="{LEFT}" y="{axis_y + 16}" font-size="11" text-anchor="middle">{_fmt(lo)}</text>',
        f'<text x="{LEFT + PLOT}" y="{axis_y + 16}" font-size="11" '
        f'text-anchor="middle">{_fmt(hi)}</text>',
    ]
    for i, p in enumerate(points):
        y = TOP + i * ROW + ROW / 2
        parts.append(
            f'<text x="{LEFT - 8}" y="{y + 4}" font-size="12" text-anchor="end">'
            f"{escape(p.label[:28])}</text>"
        )
        if p.low is not None and p.high is not None:
            parts.append(
                f'<line x1="{x(p.low):.1f}" y1="{y}" x2="{x(p.high):.1f}" y2="{y}" '
                f'stroke="#3857d6" stroke-width="3" stroke-linecap="round"/>'
            )
        if p.mean is None:
            parts.append(
                f'<circle cx="{LEFT}" cy="{y}" r="4" fill="none" stroke="#c0362c">'
                f"<title>{escape(p.label)}: −∞</title></circle>"
            )
        else:
            interval = (
                f" [{_fmt(p.low)}, {_fmt(p.high)}]"
                if p.low is not None and p.high is not None
                else ""
            )
            parts.append(
                f'<circle cx="{x(p.mean):.1f}" cy="{y}" r="4" fill="#1d2330">'
                f"<title>{escape(p.label)}: {_fmt(p.mean)}{escape(interval)}</title></circle>"
            )
    parts.append("</svg>")
    # Every interpolated text is escaped or a number.
    return mark_safe("".join(parts))  # noqa: S308
