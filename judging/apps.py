from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_delete
from django.utils.translation import gettext_lazy as _


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = _("LLM judges")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The task module registers its job kinds with jobs.services (enqueue, the sweeper)
        # in every process, the web one included.
        import judging.tasks  # noqa: F401
        from judging.models import JudgeBatch
        from runs.signals import batch_deleted

        # A deleted batch takes its job with it (runs connects the cascade from a run).
        post_delete.connect(batch_deleted, sender=JudgeBatch, dispatch_uid="judging.batch_job")

        # The kinds of judge run, each a plug-in of judging.kinds.
        from judging.kinds import kinds
        from judging.kinds.pairwise import PairwiseRun
        from judging.kinds.pointwise import PointwiseRun

        for kind in (PointwiseRun(), PairwiseRun()):
            kinds.register(kind, key=kind.key)

        # The export (dataset, below judging) carries judge columns through this registry.
        from dataset import columns
        from judging import export_columns

        columns.register(
            "judge",
            columns.ColumnProvider(
                names=export_columns.judge_config_names,
                column_names=export_columns.judge_column_names,
                aligned=export_columns.judge_columns_aligned,
            ),
        )

        # The model rankings (comparison, beside judging) rank a pairwise run's final labels
        # through this registry of dataset's.
        from dataset import label_sources
        from judging import selectors

        label_sources.register(
            "judge",
            list_runs=selectors.finished_pairwise_runs,
            labels=selectors.pairwise_judge_labels,
        )
