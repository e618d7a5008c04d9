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
from django.core.validators import MaxValueValidator, MinValueValidator
from rest_framework import serializers

# At most 19 digits, so int() never meets a 4,300-digit string; then the bigint range, which a
# value must fit to reach a query (SQLite cannot bind a larger one: an OverflowError, a 500).
_DIGITS = re.compile(r"[0-9]{1,19}")
_SIGNED = re.compile(r"-?[0-9]{1,19}")
BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1


def ascii_int(raw: Any, *, signed: bool = False) -> int | None:
    """An integer from a str of ASCII digits (an optional leading "-" when `signed`) or an int,
    within the bigint range; None for anything else (Unicode digits, "+1", "1e3", "1.5", a bool,
    a float, 2**63)."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        value = raw
    elif isinstance(raw, str) and (_SIGNED if signed else _DIGITS).fullmatch(raw.strip()):
        value = int(raw.strip())
    else:
        return None
    if not BIGINT_MIN <= value <= BIGINT_MAX or (value < 0 and not signed):
        return None
    return value


class StrictIntegerField(serializers.IntegerField):
    """DRF's IntegerField without int()'s Unicode digits: a string must be ASCII digits."""

    def to_internal_value(self, data: Any) -> int:
        readable = isinstance(data, str | int) and not isinstance(data, bool)
        if readable and ascii_int(data, signed=True) is None:
            _refuse_out_of_range(data, lambda bound, key: self.fail(key, **{key: bound}))
            self.fail("invalid")
        value: int = super().to_internal_value(data)
        return value


class StrictIntegerFormField(forms.IntegerField):
    """Django's IntegerField without int()'s Unicode digits (nor its "1.0"): ASCII digits only."""

    def to_python(self, value: Any) -> int | None:
        if isinstance(value, str) and value.strip() and ascii_int(value, signed=True) is None:
            _refuse_out_of_range(value, _form_range_error)
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        number: int | None = super().to_python(value)
        return number


def _refuse_out_of_range(raw: str | int, refuse: Any) -> None:
    """Call `refuse(bound, "max_value" | "min_value")` when `raw` is a well-formed integer beyond
    the bigint range (so the message names the range, not the format)."""
    if isinstance(raw, str):
        if not _SIGNED.fullmatch(raw.strip()):
            return
        raw = int(raw.strip())
    if raw > BIGINT_MAX:
        refuse(BIGINT_MAX, "max_value")
    elif raw < BIGINT_MIN:
        refuse(BIGINT_MIN, "min_value")


def _form_range_error(bound: int, key: str) -> None:
    validator = MaxValueValidator(bound) if key == "max_value" else MinValueValidator(bound)
    validator(bound + 1 if key == "max_value" else bound - 1)
