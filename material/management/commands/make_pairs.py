"""python manage.py make_pairs --scheme random|all [--seed N]: pair the platform's answers."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from material.pairing import SCHEMES, pairs_make, pairs_make_summary


class Command(BaseCommand):
    help = (
        "Make answer pairs from the answers on the platform: per instruction with answers of "
        "two or more models, one random pair (random, as REPA) or every pair of models (all). "
        "Existing pairs, in either order, are not made again."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--scheme", choices=SCHEMES, required=True)
        parser.add_argument(
            "--seed", type=int, default=None, help="Default: a random one (printed)."
        )
        parser.add_argument(
            "--instruction",
            type=int,
            action="append",
            dest="instructions",
            help="Only this instruction's answers (repeatable). Default: every instruction.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        report = pairs_make(
            scheme=options["scheme"],
            seed=options["seed"],
            instruction_ids=options["instructions"],
        )
        self.stdout.write(self.style.SUCCESS(pairs_make_summary(report)))
