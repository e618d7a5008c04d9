"""python manage.py import_material FILE: import instructions, models and answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from material.import_common import FORMATS
from material.importing import import_summary, material_import


class Command(BaseCommand):
    help = (
        "Import instructions, models and answers from a CSV, JSONL, XLSX or Parquet file "
        "(POLLUX column names or ours). Nothing is written if any row is wrong."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", type=Path)
        parser.add_argument(
            "--format", choices=FORMATS, default=None, help="Default: from the file extension."
        )
        parser.add_argument(
            "--max-bytes", type=int, default=None, help="Default: settings.IMPORT_MAX_BYTES."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        path: Path = options["file"]
        verbosity = int(options["verbosity"])

        def progress(done: int, total: int) -> None:
            if verbosity >= 2:
                self.stderr.write(f"\r{100 * done // max(total, 1):3d}%", ending="")

        report = material_import(
            path=path, fmt=options["format"], max_bytes=options["max_bytes"], progress=progress
        )
        if verbosity >= 2:
            self.stderr.write("")
        if report.errors:
            for error in report.errors:
                where = []
                if error.row is not None:
                    where.append(f"row {error.row}")
                if error.column:
                    where.append(f"column {error.column}")
                prefix = ", ".join(where) or "file"
                self.stderr.write(f"{prefix}: {error.message}")
            raise CommandError(import_summary(report), returncode=1)
        self.stdout.write(self.style.SUCCESS(import_summary(report)))
        if verbosity >= 2:
            self.stdout.write(f"{report.seconds:.2f} s")
