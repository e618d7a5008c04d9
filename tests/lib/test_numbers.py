"""lib.numbers.decimal_number: the locale's decimal comma and the point, nothing else."""

from __future__ import annotations

import pytest

from lib.numbers import decimal_number


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        ("0,5", 0.5),
        ("0.5", 0.5),
        ("1000,0", 1000.0),
        (" 0,06 ", 0.06),
        ("-3", -3.0),
        ("+2,", 2.0),
        (",25", 0.25),
        (7, 7.0),
        (0.125, 0.125),
    ],
)
def test_reads_a_comma_or_a_point(raw: object, value: float) -> None:
    assert decimal_number(raw) == value


@pytest.mark.parametrize(
    "raw",
    [
        "",
        " ",
        "1 000",
        "1,000.5",
        "0,5,1",
        "1e3",
        "nan",
        "inf",
        "١٫٥",
        "١",
        "--1",
        ".",
        "1" * 31,
        True,
        None,
        float("nan"),
        float("inf"),
        [1],
    ],
)
def test_refuses_everything_else(raw: object) -> None:
    assert decimal_number(raw) is None
