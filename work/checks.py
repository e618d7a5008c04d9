"""Start-up check: every kind whose work is held as assignments has its page (work.pages)."""

from __future__ import annotations

from typing import Any

from django.core import checks

from work import kinds, pages


@checks.register()
def task_kinds_complete(app_configs: Any = None, **_kwargs: Any) -> list[checks.CheckMessage]:
    return [
        checks.Error(
            f"task kind {kind.key!r} is held as assignments but has no page",
            hint="register its KindPage in work.pages (WorkConfig.ready())",
            id="work.E001",
        )
        for kind in kinds.items
        if kind.key not in pages.pages
    ]
