"""Server-side SVG bars on [0, top] (no JavaScript, no CDN): a model's profile across task types,
or two models side by side."""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

ROW = 20
LEFT = 260
PLOT = 360
RIGHT = 50
COLOURS = ("#3b6ea8", "#d08a2c")


def bars_svg(
    labels: Sequence[str],
    series: Sequence[Sequence[float | None]],
    title: str,
    *,
    top: float = 1.0,
) -> SafeString:
    """One row per label; one bar per series (at most two), a missing value left blank; the
    axis runs from 0 to `top` (the scale the values are on)."""
    n = max(1, len(series))
    height = ROW * len(labels) + 30
    width = LEFT + PLOT + RIGHT
    band = (ROW - 4) / n
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>'
    ]
    for i, label in enumerate(labels):
        y = 10 + i * ROW
        parts.append(
            f'<text x="{LEFT - 6}" y="{y + ROW / 2 + 4:.1f}" text-anchor="end" '
            f'font-size="11">{escape(label[:42])}</text>'
        )
        for k, values in enumerate(series[:2]):
            value = values[i] if i < len(values) else None
            if value is None:
                continue
            w = max(0.0, min(1.0, value / top)) * PLOT
            parts.append(
                f'<rect x="{LEFT}" y="{y + 2 + k * band:.1f}" width="{w:.1f}" '
                f'height="{band - 1:.1f}" fill="{COLOURS[k]}"><title>{value:.3f}</title></rect>'
            )
            parts.append(
                f'<text x="{LEFT + w + 4:.1f}" y="{y + 2 + (k + 0.8) * band:.1f}" '
                f'font-size="10">{value:.3f}</text>'
            )
    axis = 10 + len(labels) * ROW
    parts.append(
        f'<line x1="{LEFT}" y1="{axis}" x2="{LEFT + PLOT}" y2="{axis}" stroke="#888"/>'
        f'<text x="{LEFT}" y="{axis + 14}" font-size="10">0</text>'
        f'<text x="{LEFT + PLOT}" y="{axis + 14}" font-size="10" text-anchor="end">'
        f"{top:g}</text></svg>"
    )
    return mark_safe("".join(parts))  # noqa: S308 (every text above is escaped)
