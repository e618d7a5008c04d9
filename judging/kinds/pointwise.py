"""Pointwise judge runs (POLLUX): a score per rubric triple, JudgeEstimate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext as _

from judge_worker import JudgeItem, JudgeOutput
from judging.kinds import transport_error, with_cause
from judging.metrics import Confusion
from judging.models import JudgeEstimate, JudgeRun, RunKind
from judging.prompts import build_items
from judging.report import pointwise_fingerprint, pointwise_report
from judging.svg import confusion_svg
from work.models import Triple


class PointwiseRun:
    """Each triple of the run is judged once; its unit of work is a triple."""

    key = RunKind.POINTWISE.value
    estimate_model = JudgeEstimate

    def unit(self) -> str:
        return _("triples")

    def run_fields(
        self, *, templates: Sequence[str] | None, shots: int | None, swap_of: JudgeRun | None
    ) -> dict[str, Any]:
        return {}

    def twin_options(
        self, run: JudgeRun
    ) -> tuple[str, dict[str, Any], Sequence[str] | None, int | None]:
        raise ValueError("only a side-by-side run has a swapped twin")

    def total(self, run: JudgeRun, triple_count: int) -> int:
        return triple_count

    def todo(self, run: JudgeRun, triple_ids: Sequence[int]) -> list[Any]:
        judged = set(
            JudgeEstimate.objects.filter(run=run, triple_id__in=triple_ids).values_list(
                "triple_id", flat=True
            )
        )
        return [tid for tid in triple_ids if tid not in judged]

    def build_items(self, run: JudgeRun, todo: list[Any]) -> list[JudgeItem]:
        triples = list(
            Triple.objects.filter(pk__in=todo)
            .select_related("answer__instruction", "criterion", "rubric")
            .order_by("answer_id", "position", "id")
        )
        return build_items(run.config, triples)

    def write(
        self, run: JudgeRun, todo: list[Any], items: list[JudgeItem], outputs: list[JudgeOutput]
    ) -> str:
        """Save the verdicts; returns the batch's error ("" when every triple got one)."""
        wanted = set(todo)
        rows = []
        transport_errors: list[str] = []
        for out in outputs:
            triple_id = int(out.item_id)
            if triple_id not in wanted:
                continue
            parse = out.parse
            if transport_error(out):
                transport_errors.append(parse.error or "")
                continue
            ok = bool(parse.ok and parse.score is not None)
            rows.append(
                JudgeEstimate(
                    run=run,
                    triple_id=triple_id,
                    config_id=run.config_id,
                    score=float(parse.score) if ok and parse.score is not None else None,
                    parse_ok=ok,
                    error="" if ok else (parse.error or "no score"),
                    raw_text=out.raw_text,
                    feedback=parse.feedback or "",
                    prompt_tokens=out.prompt_tokens,
                    generated_tokens=out.generated_tokens,
                    seconds=out.seconds,
                )
            )
        # ignore_conflicts: a stale claim taken over while the first worker still finished
        # writes the same triples; the unique (run, triple) keeps the first estimate.
        JudgeEstimate.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        missing = wanted - {r.triple_id for r in rows}
        return with_cause(
            f"no verdict for {len(missing)} triples" if missing else "", transport_errors
        )

    def fingerprint(self, run: JudgeRun) -> dict[str, Any]:
        return pointwise_fingerprint(run)

    def report(self, run: JudgeRun) -> tuple[dict[str, Any], dict[str, Any]]:
        return pointwise_report(run)

    def page_context(self, run: JudgeRun, report: dict[str, Any] | None) -> dict[str, Any]:
        context: dict[str, Any] = {"kind_report": "judging/_pointwise_report.html"}
        if not report:
            return context
        return context | {
            # The paper's breakdowns (Tables 11-16, Appendix D.2): model, task type, criterion.
            "breakdowns": [
                (_("By answer model"), report["by_model"]),
                (_("By task type (top-level task)"), report["by_task"]),
                (_("By criterion"), report["by_criterion"]),
            ],
            "confusions": [
                {
                    **item,
                    "svg": confusion_svg(Confusion(item["labels"], item["matrix"]), item["group"]),
                }
                for item in report["confusions"]
            ],
        }
