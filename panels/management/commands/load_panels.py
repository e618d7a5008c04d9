from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from panels.defaults import ensure_default_panels


class Command(BaseCommand):
    help = "Create the default POLLUX panels (0 Crowd ... 10 QA) where missing."

    def handle(self, *args: Any, **options: Any) -> None:
        panels = ensure_default_panels()
        self.stdout.write(f"{len(panels)} panels present.")
