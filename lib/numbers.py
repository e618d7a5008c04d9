"""The one reader of decimal numbers typed by people: a decimal comma or a decimal point.

A Russian page shows 0.5 as "0,5" (Django localizes numbers in templates) and a browser's
`type="number"` input sends "0.5" whatever the language, so a form must take either back; no
thousands separator (in "1,000" the comma would be ambiguous), no exponent, ASCII digits only
(float() reads "١٫٥" and "1e400" too).
"""

from __future__ import annotations

import math
import re
from typing import Any

# At most 30 characters: far beyond any setting, short of anything float() would labour over.
_DECIMAL = re.compile(r"[-+]?(?:[0-9]+(?:[.,][0-9]*)?|[.,][0-9]+)")
MAX_CHARS = 30


def decimal_number(raw: Any) -> float | None:
    """A finite float from an int, a float or a str such as "0,5", "0.5", "-3", "1000,0";
    None for anything else (an empty string, "1 000", "1e3", "0,5,1", Unicode digits, a bool,
    NaN, infinities)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        text = raw.strip()
        if len(text) > MAX_CHARS or not _DECIMAL.fullmatch(text):
            return None
        value = float(text.replace(",", "."))
    else:
        return None
    return value if math.isfinite(value) else None
