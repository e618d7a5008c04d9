"""Server-side SVG pictures (no JavaScript, no CDN): the judge x experts confusion matrix."""

from __future__ import annotations

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from judging.metrics import Confusion

CELL = 44
MARGIN_LEFT = 90
MARGIN_TOP = 56


def _fmt(value: float) -> str:
    return f"{value:g}"


def confusion_svg(conf: Confusion, title: str) -> SafeString:
    """Rows: expert mode; columns: judge score; cell shade by share of its row."""
    n = len(conf.labels)
    width = MARGIN_LEFT + n * CELL + 10
    height = MARGIN_TOP + n * CELL + 10
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="confusion" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<text x="{MARGIN_LEFT}" y="14" font-size="12">judge →</text>',
        f'<text x="4" y="{MARGIN_TOP - 6}" font-size="12">experts ↓</text>',
    ]
    for i, label in enumerate(conf.labels):
        x = MARGIN_LEFT + i * CELL + CELL / 2
        parts.append(
            f'<text x="{x}" y="{MARGIN_TOP - 8}" font-size="12" '
            f'text-anchor="middle">{_fmt(label)}</text>'
        )
        y = MARGIN_TOP + i * CELL + CELL / 2 + 4
        parts.append(
            f'<text x="{MARGIN_LEFT - 8}" y="{y}" font-size="12" '
            f'text-anchor="end">{_fmt(label)}</text>'
        )
    for r, row in enumerate(conf.matrix):
        row_total = sum(row) or 1
        for c, count in enumerate(row):
            share = count / row_total
            # Diagonal (agreement) in blue, the rest in red; darker = larger share of the row.
            hue = "56,87,214" if r == c else "192,54,44"
            x = MARGIN_LEFT + c * CELL
            y = MARGIN_TOP + r * CELL
            parts.append(
                f'<rect x="{x}" y="{y}" width="{CELL - 2}" height="{CELL - 2}" '
                f'fill="rgba({hue},{0.08 + 0.85 * share:.2f})"><title>'
                f"experts {_fmt(conf.labels[r])}, judge {_fmt(conf.labels[c])}: {count}"
                "</title></rect>"
            )
            parts.append(
                f'<text x="{x + CELL / 2 - 1}" y="{y + CELL / 2 + 4}" font-size="12" '
                f'text-anchor="middle" class="count">{count}</text>'
            )
    parts.append("</svg>")
    # Every interpolated text is escaped or a number.
    return mark_safe("".join(parts))  # noqa: S308
