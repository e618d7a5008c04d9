"""lib.integers: the one strict reader of integers (ASCII digits only), plain, DRF and forms."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from rest_framework import serializers

from lib.integers import StrictIntegerField, StrictIntegerFormField, ascii_int

# What int() reads and a person or a program must not slip past a page: Arabic-Indic and
# Devanagari digits, a superscript, a sign, an exponent, a fraction, an underscore.
NOT_NUMBERS = ("١٨", "٣", "३", "²", "+1", "1e3", "1.5", "1.0", "1_000", "", " ")


def test_the_reader_takes_ascii_digits_only() -> None:
    assert ascii_int("18") == 18 and ascii_int(" 18 ") == 18 and ascii_int(18) == 18
    assert ascii_int("-1", signed=True) == -1
    # The bigint range: what a query can bind (SQLite raises OverflowError beyond it).
    assert ascii_int(str(2**63 - 1)) == 2**63 - 1 and ascii_int(2**63 - 1) == 2**63 - 1
    assert ascii_int(str(-(2**63)), signed=True) == -(2**63)
    for bad in (*NOT_NUMBERS, "-1", "9" * 19, "9" * 20, str(2**63), 2**63, None, True, 1.0, -1):
        assert ascii_int(bad) is None, bad
    assert ascii_int(str(-(2**63) - 1), signed=True) is None


def test_beyond_the_bigint_range_the_fields_name_the_range() -> None:
    with pytest.raises(ValidationError) as form_error:
        StrictIntegerFormField().clean(str(2**63))
    assert str(2**63 - 1) in str(form_error.value.messages)
    with pytest.raises(serializers.ValidationError) as api_error:
        StrictIntegerField().run_validation(2**63)
    assert str(2**63 - 1) in str(api_error.value.detail)
    with pytest.raises(serializers.ValidationError) as api_low:
        StrictIntegerField().run_validation(str(-(2**63) - 1))
    assert str(-(2**63)) in str(api_low.value.detail)


def test_the_drf_field_refuses_what_the_reader_refuses() -> None:
    field = StrictIntegerField(min_value=-5, max_value=100)
    assert field.run_validation("18") == 18 and field.run_validation(18) == 18
    assert field.run_validation("-1") == -1
    for bad in NOT_NUMBERS:
        with pytest.raises(serializers.ValidationError):
            field.run_validation(bad)


def test_the_form_field_refuses_what_the_reader_refuses() -> None:
    field = StrictIntegerFormField(min_value=-5, required=False)
    assert field.clean("18") == 18 and field.clean(" 18 ") == 18 and field.clean("-1") == -1
    assert field.clean("") is None
    for bad in NOT_NUMBERS:
        if bad.strip():
            with pytest.raises(ValidationError):
                field.clean(bad)
