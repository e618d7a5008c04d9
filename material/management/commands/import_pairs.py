"""python manage.py import_pairs FILE: import answer pairs (REPA's columns or ours)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from material.import_common import FORMATS
from material.pairs import pairs_import, pairs_import_summary


class Command(BaseCommand):
    help = (
        "Import answer pairs from a CSV, JSONL, XLSX or Parquet file (REPA column names: query, "
        "query_category, model_name_1, model_name_2, model_output_1, model_output_2, id, source; "
        "or ours). Nothing is written if any row is wrong; importing again adds nothing."
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
        report = pairs_import(
            path=options["file"], fmt=options["format"], max_bytes=options["max_bytes"]
        )
        if report.errors:
            for error in report.errors:
                where = []
                if error.row is not None:
                    where.append(f"row {error.row}")
                if error.column:
                    where.append(f"column {error.column}")
                self.stderr.write(f"{', '.join(where) or 'file'}: {error.message}")
            raise CommandError(pairs_import_summary(report), returncode=1)
        self.stdout.write(self.style.SUCCESS(pairs_import_summary(report)))
