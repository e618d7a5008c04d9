"""Start-up check: every kind whose work is held as assignments has its gold items
(quality.kinds), so exams and control items can ask it."""

from __future__ import annotations

from typing import Any

from django.core import checks

from quality import kinds as gold_kinds
from work import kinds


@checks.register()
def gold_kinds_complete(app_configs: Any = None, **_kwargs: Any) -> list[checks.CheckMessage]:
    return [
        checks.Error(
            f"task kind {kind.key!r} is held as assignments but has no gold items",
            hint="register its GoldKind in quality.kinds (QualityConfig.ready())",
            id="quality.E001",
        )
        for kind in kinds.items
        if kind.key not in gold_kinds.kinds
    ]
