"""python manage.py export_dataset --format xlsx|parquet --out PATH [rule options]."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dataset.aggregation import AggregationSettings
from dataset.export import FORMATS, ExportOptions, dataset_export


def add_rule_arguments(parser: CommandParser) -> None:
    parser.add_argument(
        "--keep-invalid-rationales",
        action="store_true",
        help="Rule 1 off: keep estimates whose rationale breaks the rules.",
    )
    parser.add_argument(
        "--keep-after-critical",
        action="store_true",
        help="Rule 2 off: keep an answer's triples after a critical-violation vote.",
    )
    parser.add_argument(
        "--min-estimates", type=int, default=2, help="Rule 3: fewest estimates a triple needs."
    )


def rules_from_options(options: dict[str, Any]) -> AggregationSettings:
    return AggregationSettings(
        drop_invalid_rationale=not options["keep_invalid_rationales"],
        drop_after_critical=not options["keep_after_critical"],
        min_estimates=options["min_estimates"],
    )


class Command(BaseCommand):
    help = (
        "Export the final dataset. Parquet: a directory with one file per table (or one .zip "
        "when PATH ends with .zip); xlsx: one workbook."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=FORMATS, required=True)
        parser.add_argument("--out", required=True, type=Path)
        parser.add_argument("--chunk-rows", type=int, default=50_000)
        add_rule_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        export_options = ExportOptions(
            fmt=options["format"],
            rules=rules_from_options(options),
            chunk_rows=options["chunk_rows"],
        )

        def progress(done: int, total: int, message: str) -> None:
            if options["verbosity"] > 1:
                self.stderr.write(f"{message}: {done}/{total}")

        report = dataset_export(options["out"], export_options, progress=progress)
        rows = ", ".join(f"{name} {n}" for name, n in report["rows"].items())
        self.stdout.write(f"Wrote {options['out']}: {rows}")
