from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from work.assignments import assignments_build


class Command(BaseCommand):
    help = "Build triples and assignments for every answer (idempotent: only fills gaps)."

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        report = assignments_build(
            progress=lambda done, total: self.stdout.write(f"\r{done}/{total} answers", ending="")
        )
        self.stdout.write("")
        self.stdout.write(f"{report} in {time.perf_counter() - started:.1f} s")
