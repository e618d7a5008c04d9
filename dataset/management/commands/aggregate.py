"""python manage.py aggregate [rule options]: recompute TripleAggregate and print agreement."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dataset.aggregation import aggregation_run
from dataset.management.commands.export_dataset import add_rule_arguments, rules_from_options


class Command(BaseCommand):
    help = "Aggregate expert estimates into TripleAggregate (the POLLUX protocol)."

    def add_arguments(self, parser: CommandParser) -> None:
        add_rule_arguments(parser)

    def handle(self, *args: Any, **options: Any) -> None:
        report = aggregation_run(rules=rules_from_options(options))
        for key, value in report.items():
            if key != "agreement":
                self.stdout.write(f"{key}: {value}")
        overall = next((r for r in report["agreement"] if r["dimension"] == "all"), None)
        if overall:
            self.stdout.write(
                "agreement: confidence {mean_confidence}, mode share {mode_share}, "
                "alpha {alpha_ordinal} (random: {baseline_confidence})".format(**overall)
            )
