"""The one strict reader of integers typed by people and programs: ASCII digits only.

Python's int() reads every Unicode decimal digit ("١٨" is 18, "٣" is 3) and so do Django's and
DRF's integer fields, which call it; an id or a score that a page refuses must not pass through
an API because of that. `ascii_int` is the reader for hand-parsed values, `StrictIntegerField`
the DRF field for JSON bodies (a JSON number stays a number; a string must be ASCII digits) and
`StrictIntegerFormField` the Django form field.
"""

from __future__ import annotations

import re
from typing import Any

from django import forms
from rest_framework import serializers

# At most 19 digits: every bigint fits, and int() never meets a 4,300-digit string.
_DIGITS = re.compile(r"[0-9]{1,19}")
_SIGNED = re.compile(r"-?[0-9]{1,19}")


def ascii_int(raw: Any, *, signed: bool = False) -> int | None:
    """An integer from a str of ASCII digits (an optional leading "-" when `signed`) or an int;
    None for anything else (Unicode digits, "+1", "1e3", "1.5", a bool, a float)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw if signed or raw >= 0 else None
    if not isinstance(raw, str):
        return None
    text = raw.strip()
    if not (_SIGNED if signed else _DIGITS).fullmatch(text):
        return None
    return int(text)


class StrictIntegerField(serializers.IntegerField):
    """DRF's IntegerField without int()'s Unicode digits: a string must be ASCII digits."""

    def to_internal_value(self, data: Any) -> int:
        if isinstance(data, str) and ascii_int(data, signed=True) is None:
            self.fail("invalid")
        value: int = super().to_internal_value(data)
        return value


class StrictIntegerFormField(forms.IntegerField):
    """Django's IntegerField without int()'s Unicode digits (nor its "1.0"): ASCII digits only."""

    def to_python(self, value: Any) -> int | None:
        if isinstance(value, str) and value.strip() and ascii_int(value, signed=True) is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        number: int | None = super().to_python(value)
        return number
