"""DRF's JSON parser, made total and bounded: the body is read by lib.bounded_json, so the API
meets the limits every page meets (size, depth checked without recursion, digits, NaN and
Infinity) and answers each with a 400 naming the body and the limit. DRF's own parser let a body
nested deeper than Python's recursion limit escape as RecursionError (a 500), and read a number
of 4,000 digits. A float beyond range (1e999) is read as inf, as DRF reads it, so that the
serializer's field refuses it naming the field."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from lib import bounded_json

# How the error names what was refused: the API's JSON is the request body as a whole.
BODY = "body"


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        # DRF reads the request's stream past Django's DATA_UPLOAD_MAX_MEMORY_SIZE: one byte
        # more than the limit is enough to refuse.
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        raw = stream.read(limit + 1)
        try:
            if len(raw) > limit:
                # Refused on the bytes as sent, with the reader's message, before decoding.
                bounded_json.loads(raw, max_bytes=limit, field=BODY)
            try:
                # The Content-Type header's charset decides, as in DRF (UTF-8 by default).
                # bytes.decode takes text encodings only: no "bz2_codec" inflating the body.
                text = raw.decode(encoding)
            except LookupError as error:
                raise ParseError(f'Unsupported charset "{encoding}" in the Content-Type') from error
            except UnicodeDecodeError as error:
                raise ParseError(f"JSON parse error - {BODY}: not {encoding} text") from error
            # Sized above in bytes as sent; in UTF-8 another charset's text may take up to 4
            # bytes a character.
            return bounded_json.loads(
                text,
                max_bytes=4 * limit,
                field=BODY,
                # As DRF: NaN and Infinity refused here (STRICT_JSON), 1e999 read as inf for
                # the serializer's field to refuse, naming the field.
                allow_nan=not self.strict,
                allow_overflow=True,
            )
        except bounded_json.JSONLimitError as error:
            raise ParseError(f"JSON parse error - {error.named}") from error
