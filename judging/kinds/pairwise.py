"""Side-by-side judge runs (REPA): a label per pair triple and prompt template,
PairwiseJudgeEstimate; the unit of work is a call (triple, template)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.utils.translation import gettext as _

from judge_worker import PAIRWISE_TEMPLATES, JudgeItem, JudgeOutput
from judging import pairwise, selectors
from judging.kinds import transport_error, with_cause
from judging.models import JudgeRun, PairwiseJudgeEstimate, RunKind
from judging.pairwise_report import pairwise_fingerprint, run_pairwise_report


class PairwiseRun:
    """Each triple is asked once per template of the run."""

    key = RunKind.PAIRWISE.value
    estimate_model = PairwiseJudgeEstimate

    def unit(self) -> str:
        return _("calls (triple × template)")

    def run_fields(
        self, *, templates: Sequence[str] | None, shots: int | None, swap_of: JudgeRun | None
    ) -> dict[str, Any]:
        """REPA's three templates and one gold example unless told; a twin swaps A and B."""
        chosen = list(templates if templates is not None else pairwise.DEFAULT_TEMPLATES)
        unknown = [t for t in chosen if t not in PAIRWISE_TEMPLATES]
        if not chosen or unknown or len(set(chosen)) != len(chosen):
            raise ValueError(
                f"templates must be distinct names of {sorted(PAIRWISE_TEMPLATES)}, got {chosen}"
            )
        k = pairwise.DEFAULT_SHOTS if shots is None else int(shots)
        if not 0 <= k <= pairwise.MAX_SHOTS:
            raise ValueError(f"shots must be between 0 and {pairwise.MAX_SHOTS}, got {k}")
        return {
            "templates": chosen,
            "shots": k,
            "swapped": swap_of is not None and not swap_of.swapped,
            "swap_of": swap_of,
        }

    def twin_options(
        self, run: JudgeRun
    ) -> tuple[str, dict[str, Any], Sequence[str] | None, int | None]:
        return self.key, run.scope, run.templates, run.shots

    def total(self, run: JudgeRun, triple_count: int) -> int:
        return triple_count * len(run.templates)

    def todo(self, run: JudgeRun, triple_ids: Sequence[int]) -> list[Any]:
        return list(pairwise.todo_items(run, triple_ids))

    def build_items(self, run: JudgeRun, todo: list[Any]) -> list[JudgeItem]:
        return list(pairwise.build_items(run, todo))

    def write(
        self, run: JudgeRun, todo: list[Any], items: list[JudgeItem], outputs: list[JudgeOutput]
    ) -> str:
        """Save the labels (unique per run, triple and template); a label is read by the REPA
        parser, not the backend's POLLUX parse."""
        by_id = {it.item_id: it for it in items}
        rows, transport_errors = [], []
        for out in outputs:
            item = by_id.get(out.item_id)
            if item is None:
                continue
            if transport_error(out):
                transport_errors.append(out.parse.error or "")  # not an answer: asked again
                continue
            rows.append(
                pairwise.estimate_from_output(
                    run,
                    item,
                    out.raw_text,
                    prompt_tokens=out.prompt_tokens,
                    generated_tokens=out.generated_tokens,
                    seconds=out.seconds,
                )
            )
        PairwiseJudgeEstimate.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
        missing = len(todo) - len(rows)
        return with_cause(f"no answer for {missing} calls" if missing else "", transport_errors)

    def fingerprint(self, run: JudgeRun) -> dict[str, Any]:
        return pairwise_fingerprint(run)

    def report(self, run: JudgeRun) -> tuple[dict[str, Any], dict[str, Any]]:
        return run_pairwise_report(run)

    def page_context(self, run: JudgeRun, report: dict[str, Any] | None) -> dict[str, Any]:
        return {
            "twins": selectors.run_twins(run),
            "kind_head": "judging/_pairwise_head.html",
            "kind_report": "judging/_pairwise_report.html",
        }
