from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from taxonomy.services import CATALOGUE_DIR, load_pollux


class Command(BaseCommand):
    help = "Load the POLLUX task taxonomy and criteria catalogue (idempotent)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--dir", type=Path, default=CATALOGUE_DIR)

    def handle(self, *args: Any, **options: Any) -> None:
        report = load_pollux(options["dir"])
        if not report.changed:
            self.stdout.write("POLLUX catalogue already up to date: nothing changed.")
            return
        self.stdout.write(
            f"created {report.created}, updated {report.updated}, "
            f"new rubric versions {report.rubric_versions}"
        )
