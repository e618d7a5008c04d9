"""DRF's JSON parser, made total: a body nested deeper than Python's recursion limit raises
RecursionError inside json.loads, which DRF does not catch (a 500); here it is a 400 like any
other unreadable body."""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as error:
            raise ParseError("JSON parse error - nested too deeply") from error
