"""lib.bounded_json: every limit at its edge, and no input that escapes as another exception."""

from __future__ import annotations

import io
import json
import math
import time
from typing import Any

import pytest
from django.utils import translation
from rest_framework.exceptions import ParseError

from lib.bounded_json import JSONLimitError, loads, too_deep
from lib.jsonparser import JSONParser

MB = 1 << 20


def refused(data: str | bytes, **limits: Any) -> JSONLimitError:
    limits.setdefault("max_bytes", MB)
    with pytest.raises(JSONLimitError) as error:
        loads(data, **limits)
    return error.value


def nested(depth: int, opener: str = "[") -> str:
    if opener == "{":
        return '{"a": ' * depth + "0" + "}" * depth
    return "[" * depth + "]" * depth


# --------------------------------------------------------------------- depth


@pytest.mark.parametrize("opener", ["[", "{"])
def test_depth_at_the_limit_is_read_and_one_more_is_refused(opener: str) -> None:
    assert loads(nested(5, opener), max_bytes=MB, max_depth=5) is not None
    error = refused(nested(6, opener), max_depth=5)
    assert error.code == "depth" and "5 levels" in str(error)


def test_the_default_depth_is_64() -> None:
    assert loads(nested(64), max_bytes=MB) is not None
    assert refused(nested(65)).code == "depth"


@pytest.mark.parametrize(
    "text",
    [
        "[" * 50_000 + "]" * 50_000,
        "[" * 50_000,  # unterminated: json.loads would recurse before it saw the end
        '{"a": ' * 50_000,
        '{"a": [' * 25_000,
    ],
)
def test_50000_deep_nesting_is_refused_without_recursion(text: str) -> None:
    assert refused(text, max_bytes=10 * MB).code == "depth"


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps(["[[[[{{{{" * 100, {"k": "]]]]}}}}" * 100}, 'a \\"[[[[[[ quote'])
    assert loads(text, max_bytes=MB, max_depth=2)[0].startswith("[[[[")
    assert not too_deep(text, 2) and too_deep(text, 1)


def test_brackets_after_an_unterminated_string_are_inside_it() -> None:
    # json.loads reports the string; the scan must not call it a depth problem.
    error = refused('["abc' + "[" * 1000)
    assert error.code == "invalid"


def test_a_depth_above_the_recursion_limit_is_still_a_limit_error() -> None:
    # A caller's max_depth beyond the interpreter's recursion: RecursionError is caught too.
    assert refused("[" * 50_000 + "]" * 50_000, max_depth=10**9).code == "depth"


# --------------------------------------------------------------------- numbers


def test_integer_digits_at_the_limit_are_read_and_one_more_is_refused() -> None:
    assert loads("9" * 100, max_bytes=MB) == int("9" * 100)
    assert loads("-" + "9" * 100, max_bytes=MB) == -int("9" * 100)
    assert loads('{"n": ' + "1" * 20 + "}", max_bytes=MB, max_int_digits=20) == {"n": int("1" * 20)}
    error = refused('{"n": ' + "1" * 21 + "}", max_int_digits=20)
    assert error.code == "digits" and "20 digits" in str(error)
    assert refused("-" + "9" * 101).code == "digits"


def test_an_integer_beyond_pythons_conversion_limit_is_a_limit_error() -> None:
    # 5,000 digits: json.loads alone raises int()'s ValueError about sys.set_int_max_str_digits.
    error = refused("[" + "7" * 5000 + "]")
    assert error.code == "digits" and "set_int_max_str_digits" not in str(error)


@pytest.mark.parametrize("text", ["1e400", "-1e400", "[1" + "0" * 400 + ".0]"])
def test_a_float_out_of_range_is_refused(text: str) -> None:
    error = refused(text, max_int_digits=1000)
    assert error.code == "range" and "out of range" in str(error)


def test_a_float_of_too_many_digits_is_refused_and_ordinary_floats_are_read() -> None:
    assert loads("[0.5, -1.25e-3, 1e308]", max_bytes=MB) == [0.5, -1.25e-3, 1e308]
    assert refused("0." + "1" * 200).code == "digits"


@pytest.mark.parametrize("name", ["NaN", "Infinity", "-Infinity"])
def test_nan_and_infinity_are_refused(name: str) -> None:
    error = refused(f'{{"t": {name}}}')
    assert error.code == "constant" and name in str(error)


# --------------------------------------------------------------------- size


def test_size_at_the_limit_is_read_and_one_byte_more_is_refused() -> None:
    text = json.dumps("x" * 98)  # 100 bytes
    assert loads(text, max_bytes=100) == "x" * 98
    assert loads(text.encode(), max_bytes=100) == "x" * 98
    error = refused(json.dumps("x" * 99), max_bytes=100)
    assert error.code == "size" and "101 bytes" in str(error) and "100" in str(error)
    assert refused(json.dumps("x" * 99).encode(), max_bytes=100).code == "size"


def test_a_str_is_sized_in_utf8_bytes() -> None:
    text = json.dumps("я" * 10, ensure_ascii=False)  # 12 characters, 22 bytes
    assert loads(text, max_bytes=22) == "я" * 10
    assert refused(text, max_bytes=21).code == "size"


# --------------------------------------------------------------------- syntax and encoding


def test_invalid_json_names_line_and_column() -> None:
    error = refused('{\n  "a": 1,\n  "b": }')
    assert error.code == "invalid" and (error.line, error.column) == (3, 8)
    assert "line 3, column 8" in str(error)


def test_bytes_and_str_read_alike_and_a_bom_as_json_loads_reads_it() -> None:
    value = {"текст": "ёж", "n": [1, 2.5, None, True]}
    text = json.dumps(value, ensure_ascii=False)
    assert loads(text, max_bytes=MB) == value
    assert loads(text.encode(), max_bytes=MB) == value
    assert loads(bytearray(text.encode()), max_bytes=MB) == value
    # Bytes: a UTF-8 BOM is dropped and UTF-16 is told by its first bytes (json.loads' rule).
    assert loads(b"\xef\xbb\xbf" + text.encode(), max_bytes=MB) == value
    assert loads(text.encode("utf-16-le"), max_bytes=MB) == value
    # A str that still starts with a BOM was decoded wrongly: not JSON, as for json.loads.
    assert refused("\ufeff" + text).code == "invalid"


def test_bytes_not_in_their_encoding_are_refused() -> None:
    error = refused(b'{"a": "\xff"}')
    assert error.code == "encoding" and "UTF-8" in str(error)


# --------------------------------------------------------------------- the error


def test_the_error_is_a_value_error_carrying_its_field() -> None:
    error = refused(nested(100), field="inference_settings")
    assert isinstance(error, ValueError)
    assert error.field == "inference_settings"
    assert error.named == f"inference_settings: {error.message}"
    assert refused("[").named == refused("[").message


@pytest.mark.parametrize(
    ("text", "russian"),
    [
        (nested(65), "Вложенность JSON больше 64 уровней."),
        ("1" * 101, "Число в JSON длиннее 100 цифр."),
        ("1e400", "Число в JSON вне допустимого диапазона: 1e400."),
        ("NaN", "NaN — не число JSON."),
        ("[1,", "Текст не является JSON: Expecting value (строка 1, столбец 4)."),
    ],
)
def test_the_messages_are_translated(text: str, russian: str) -> None:
    with translation.override("ru"):
        assert str(refused(text)) == russian
    with translation.override("ru"):
        assert "2 байт" in str(refused("[]", max_bytes=1))


def test_a_large_ordinary_document_is_read_in_linear_time() -> None:
    def document(n: int) -> tuple[str, list[dict[str, Any]]]:
        rows = [{"k": "v[{" * 5, "n": i, "x": [1.5, 'q"]']} for i in range(n)]
        return json.dumps(rows), rows

    def cpu_seconds(text: str) -> float:
        # The process's own CPU time, the least of three: other work on the machine does not
        # count, as it does in wall time.
        times = []
        for _ in range(3):
            started = time.process_time()
            loads(text, max_bytes=len(text))
            times.append(time.process_time() - started)
        return min(times)

    small, rows = document(25_000)
    large, _rows = document(100_000)
    assert loads(small, max_bytes=len(small)) == rows
    # Four times the text: about four times the work when the scan is linear, sixteen when it
    # is quadratic.
    assert cpu_seconds(large) < 8 * cpu_seconds(small) + 0.05


def test_nonfinite_numbers_are_read_for_a_caller_that_refuses_them_itself() -> None:
    value = loads("[NaN, Infinity, -Infinity]", max_bytes=MB, allow_nan=True)
    assert value[0] != value[0] and value[1:] == [math.inf, -math.inf]
    assert loads("[1e400, -1e400]", max_bytes=MB, allow_overflow=True) == [math.inf, -math.inf]
    # Each switch opens its own door only, and the other limits still hold.
    assert refused("1e400", allow_nan=True).code == "range"
    assert refused("NaN", allow_overflow=True).code == "constant"
    assert refused("[" + "1" * 101 + "]", allow_nan=True, allow_overflow=True).code == "digits"


# --------------------------------------------------------------------- the API's parser


def test_the_api_parser_meets_the_same_limits_naming_the_body() -> None:
    for body, limit in [
        (nested(65).encode(), "64 levels"),
        (b'{"score": ' + b"1" * 101 + b"}", "100 digits"),
        (b'{"t": NaN}', "NaN"),
        (b'{"a": 1,}', "line 1, column 9"),
    ]:
        with pytest.raises(ParseError) as error:
            JSONParser().parse(io.BytesIO(body))
        assert "body: " in str(error.value.detail) and limit in str(error.value.detail)
    assert JSONParser().parse(io.BytesIO(nested(64).encode())) is not None


def test_the_api_parser_refuses_a_body_over_the_upload_limit(settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    assert JSONParser().parse(io.BytesIO(json.dumps("x" * 98).encode())) == "x" * 98
    with pytest.raises(ParseError, match="100"):
        JSONParser().parse(io.BytesIO(json.dumps("x" * 99).encode()))


def test_the_api_parser_decodes_with_the_requests_charset() -> None:
    body = json.dumps({"t": "é"}, ensure_ascii=False)
    parsed = JSONParser().parse(io.BytesIO(body.encode("latin-1")), None, {"encoding": "latin-1"})
    assert parsed == {"t": "é"}
    with pytest.raises(ParseError, match="utf-8"):
        JSONParser().parse(io.BytesIO(body.encode("latin-1")))


def test_the_api_parser_leaves_a_float_beyond_range_to_the_serializers_field() -> None:
    # As DRF's parser: inf reaches the field, whose error names it (tests/test_bad_input.py).
    assert JSONParser().parse(io.BytesIO(b'{"score": 1e999}')) == {"score": math.inf}


@pytest.mark.parametrize("charset", ["bz2_codec", "no-such-charset"])
def test_the_api_parser_refuses_a_charset_that_is_no_text_encoding(charset: str) -> None:
    with pytest.raises(ParseError, match="charset"):
        JSONParser().parse(io.BytesIO(b"{}"), None, {"encoding": charset})
