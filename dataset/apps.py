from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DatasetConfig(AppConfig):
    name = "dataset"
    verbose_name = _("Dataset")

    def ready(self) -> None:
        from dataset import pairwise, parts
        from dataset import tasks as _tasks  # noqa: F401  (registers the aggregation and export jobs)

        # The side-by-side kind's verdicts and `pairs` table (dataset.parts).
        parts.parts.register(pairwise.PairwisePart(), key=pairwise.PairwisePart.key)
