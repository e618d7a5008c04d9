from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DatasetConfig(AppConfig):
    name = "dataset"
    verbose_name = _("Dataset")

    def ready(self) -> None:
        # Each kind's verdict and export table (work.kinds: the task-kind seam).
        from dataset import aggregation, export_schema, instructions, markup, pairwise
        from dataset import tasks as _tasks  # noqa: F401  (registers the aggregation and export jobs)
        from work import kinds

        kinds.contribute(
            kinds.POINTWISE,
            "dataset",
            aggregate=aggregation.aggregate_estimates,
            export_schema=export_schema.triple_schema,
        )
        kinds.contribute(
            kinds.PAIRWISE,
            "dataset",
            aggregate=pairwise.aggregate_labels,
            export_schema=pairwise.pairs_schema,
        )
        kinds.contribute(kinds.MARKUP, "dataset", export_schema=markup.markup_schemas)
        kinds.contribute(kinds.AUTHORING, "dataset", export_schema=instructions.instruction_schema)
