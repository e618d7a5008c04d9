from __future__ import annotations

from typing import Any

from django.http import HttpRequest


def discussion(request: HttpRequest) -> dict[str, Any]:
    return {}
