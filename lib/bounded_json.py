"""The one reader of JSON that people send (a form's field, an uploaded file, a line of JSON lines,
a request body): json.loads with limits, and one exception for every way the text is refused.

json.loads alone is not total on hostile input. It recurses once per nesting level, so 3,000
nested lists raise RecursionError; an integer of more than 4,300 digits raises Python's
int-string conversion ValueError (and one of 4,000 digits is read, slowly, into a number no
field can hold); 1e400 is read as infinity and NaN as a float that no database stores. Each of
these would be a 500. Here each is a `JSONLimitError` (a ValueError) whose message, in the
user's language, names the limit broken: size, nesting depth, a number's digits or range, the
NaN/Infinity constants, the encoding, or the position of a syntax error.

Depth is checked before json.loads by a scan that does not recurse (the strings cut out with one
regular expression, then a running sum over the brackets left), so the parser never goes deeper
than `max_depth`. Numbers are bounded through json's own `parse_int` and `parse_float` hooks.
Bytes are decoded as json.loads decodes them (UTF-8 with or without a BOM, or UTF-16/32 told
by their first bytes); a str is read as it is (a str starting with a BOM is not JSON, as for
json.loads).

Our own files (the catalogue, the judge worker's messages, the benchmarks) are read with plain
json: these limits are for what comes from outside.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any

from django.utils.translation import gettext_lazy as _

DEFAULT_MAX_DEPTH = 64
DEFAULT_MAX_INT_DIGITS = 100

# A JSON string, or an unterminated one to the end of the text: the closing quote is optional so
# that the pattern always matches at a quote, and never rescans the rest of the text from each
# later quote (which would be quadratic on `"\"\"\"...`).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
# A number quoted back in a message is cut to this many characters.
_QUOTED = 30

_SIZE = _("The JSON has %(size)s bytes; at most %(max)s are allowed.")
_DEPTH = _("The JSON is nested more than %(n)s levels deep.")
_DIGITS = _("A number in the JSON has more than %(n)s digits.")
_RANGE = _("A number in the JSON is out of range: %(number)s.")
_CONSTANT = _("%(name)s is not a JSON number.")
_INVALID = _("The text is not JSON: %(error)s (line %(line)s, column %(column)s).")
_ENCODING = _("The JSON is not %(encoding)s text.")


class JSONLimitError(ValueError):
    """Why a JSON text is refused. `code` is one of "size", "depth", "digits", "range",
    "constant", "invalid", "encoding"; `field` the field the caller named; `line` and `column`
    where a syntax error was found (1-based), else None."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        field: str | None = None,
        line: int | None = None,
        column: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field = field
        self.line = line
        self.column = column

    def __str__(self) -> str:
        return self.message

    @property
    def named(self) -> str:
        """The message after the field's name, where the caller gave one."""
        return f"{self.field}: {self.message}" if self.field else self.message


def too_deep(text: str, max_depth: int) -> bool:
    """Whether arrays and objects in `text` nest deeper than `max_depth` (outside strings),
    found without recursion in linear time. Brackets after an unterminated string are inside it,
    for json.loads too, and do not count."""
    if text.count("[") + text.count("{") <= max_depth:
        return False  # cannot nest deeper than it has brackets: the common case, no scan
    outside = _STRING.sub("", text)
    brackets = _NOT_BRACKET.sub("", outside)
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > max_depth


def loads(
    data: str | bytes,
    *,
    max_bytes: int,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_int_digits: int = DEFAULT_MAX_INT_DIGITS,
    field: str | None = None,
    allow_nan: bool = False,
    allow_overflow: bool = False,
) -> Any:
    """The value of the JSON text `data`, or JSONLimitError naming the limit it breaks: more
    than `max_bytes` bytes (UTF-8 for a str), arrays and objects nested more than `max_depth`
    deep, a number of more than `max_int_digits` digits or out of a float's range, NaN or
    Infinity, text that is not JSON (with its line and column), bytes not in their encoding.
    `field` is carried on the error for the caller's message.

    `allow_nan` reads the constants NaN, Infinity and -Infinity as the floats they name, and
    `allow_overflow` a float beyond range (1e400) as ±inf, for a caller that refuses them
    itself where it can say more: naming the column (the imports' typed readers) or the field
    (the API's serializers)."""

    def refuse(code: str, message: str, **where: int) -> JSONLimitError:
        return JSONLimitError(code, message, field=field, **where)

    if isinstance(data, bytes | bytearray):
        if len(data) > max_bytes:
            raise refuse("size", _SIZE % {"size": len(data), "max": max_bytes})
        encoding = json.detect_encoding(data)
        try:
            # utf-8-sig drops a leading BOM, as json.loads does for bytes.
            text = bytes(data).decode(encoding)
        except UnicodeDecodeError:
            name = encoding.upper().replace("-SIG", "")
            raise refuse("encoding", _ENCODING % {"encoding": name}) from None
    else:
        text = data
        # A code point takes at most 4 bytes in UTF-8: most texts are sized without encoding.
        if len(text) * 4 > max_bytes:
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > max_bytes:
                raise refuse("size", _SIZE % {"size": size, "max": max_bytes})

    if too_deep(text, max_depth):
        raise refuse("depth", _DEPTH % {"n": max_depth})

    def parse_int(literal: str) -> int:
        # Checked before int(), which is quadratic in the digits and refuses 4,300 of them.
        if len(literal) > max_int_digits and len(literal.lstrip("-")) > max_int_digits:
            raise refuse("digits", _DIGITS % {"n": max_int_digits})
        return int(literal)

    def parse_float(literal: str) -> float:
        if len(literal) > max_int_digits and sum(c.isdigit() for c in literal) > max_int_digits:
            raise refuse("digits", _DIGITS % {"n": max_int_digits})
        value = float(literal)
        if math.isinf(value) and not allow_overflow:
            # 1e400 reads as inf: no field or database keeps it.
            raise refuse("range", _RANGE % {"number": literal[:_QUOTED]})
        return value

    def parse_constant(name: str) -> Any:
        if allow_nan:
            return float(name)  # "NaN", "Infinity", "-Infinity": float() reads all three
        raise refuse("constant", _CONSTANT % {"name": name})

    try:
        return json.loads(
            text, parse_int=parse_int, parse_float=parse_float, parse_constant=parse_constant
        )
    except json.JSONDecodeError as error:
        message = _INVALID % {"error": error.msg, "line": error.lineno, "column": error.colno}
        raise refuse("invalid", message, line=error.lineno, column=error.colno) from None
    except RecursionError:
        # Only when a caller's max_depth is above the interpreter's recursion limit.
        raise refuse("depth", _DEPTH % {"n": max_depth}) from None
