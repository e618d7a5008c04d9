"""markup_import: store span markups from contest JSON files (.json) or inline markups (any
other extension), each validated; an invalid file is reported and nothing of it is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from markup.files import expert_named, read_document
from markup.models import MarkupSource, MarkupStatus
from markup.services import markup_store
from protocol.markup_format import MarkupFormatError


class Command(BaseCommand):
    help = "Import span markups (contest JSON or inline markup files) into the markup app."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("files", nargs="+", type=Path)
        parser.add_argument("--source", choices=MarkupSource.values, default=MarkupSource.EXPERT)
        parser.add_argument(
            "--author", default="", help="the label (default: the file's expert field)"
        )
        parser.add_argument("--status", choices=MarkupStatus.values, default=MarkupStatus.SUBMITTED)
        parser.add_argument("--classifier", default="prochtenie")
        parser.add_argument("--classifier-version", default="2020")

    def handle(self, *args: Any, **options: Any) -> None:
        failed = 0
        for path in options["files"]:
            try:
                document, notes = read_document(
                    path.name,
                    path.read_bytes(),
                    options["classifier"],
                    options["classifier_version"],
                )
                author = options["author"] or str(document.meta.get("expert") or "").strip()
                expert = expert_named(author) if options["source"] == MarkupSource.EXPERT else None
                markup = markup_store(
                    document,
                    source=options["source"],
                    author=author,
                    expert=expert,
                    status=options["status"],
                    classifier_name=options["classifier"],
                    classifier_version=options["classifier_version"],
                )
            except (OSError, UnicodeDecodeError, MarkupFormatError, ValueError) as error:
                failed += 1
                self.stderr.write(f"{path}: {error}")
                continue
            for note in notes:
                self.stdout.write(f"{path}: {note}")
            self.stdout.write(
                f"{path}: markup {markup.pk} of text {markup.text.external_id} "
                f"({len(markup.selections)} fragments)"
            )
        if failed:
            raise CommandError(f"{failed} of {len(options['files'])} files not imported")
