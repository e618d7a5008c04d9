"""Start-up check: every registered task kind has all its slots filled (work.kinds)."""

from __future__ import annotations

from typing import Any

from django.core import checks

from work import kinds


@checks.register()
def task_kinds_complete(app_configs: Any = None, **_kwargs: Any) -> list[checks.CheckMessage]:
    return [
        checks.Error(
            f"task kind {kind.key!r} has no {', '.join(missing)}",
            hint="the app owning the slot fills it in its AppConfig.ready() (work.kinds)",
            id="work.E001",
        )
        for kind in kinds.registered()
        if (missing := kinds.missing_slots(kind))
    ]
