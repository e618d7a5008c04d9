"""lib.jsonparser: every unreadable JSON body is a ParseError (400), never another exception."""

from __future__ import annotations

import io

import pytest
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser as DRFJSONParser

from lib.jsonparser import JSONParser


@pytest.mark.parametrize(
    "body", [b"[" * 100_000, b'{"a": ' * 50_000, b"{not json", b'{"n": ' + b"1" * 5000 + b"}"]
)
def test_unreadable_bodies_are_parse_errors(body: bytes) -> None:
    with pytest.raises(ParseError):
        JSONParser().parse(io.BytesIO(body))


def test_drf_alone_lets_deep_nesting_escape() -> None:
    # Why the subclass exists: DRF's own parser raises RecursionError (a 500 in a view).
    with pytest.raises(RecursionError):
        DRFJSONParser().parse(io.BytesIO(b"[" * 100_000))


def test_a_good_body_parses() -> None:
    assert JSONParser().parse(io.BytesIO(b'{"a": [1, 2]}')) == {"a": [1, 2]}
