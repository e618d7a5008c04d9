"""Judging fixtures: the catalogue loaded once per session, triples with expert scores, and a
scripted judge backend (a deterministic stand-in for a model; everything else is real)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone

from judge_worker import JudgeItem, JudgeOutput, parse_judge_output
from material.models import Answer
from panels.models import Expert, Panel
from taxonomy.models import Criterion
from tests.conftest import make_expert
from work.models import Assignment, AssignmentStatus, Estimate, EstimateStatus, Triple

if "judging" not in settings.INSTALLED_APPS:
    # Until the integrator adds "judging" to INSTALLED_APPS, these tests run only with
    # `--ds=judging._devsettings`; elsewhere they are left out instead of failing to import.
    collect_ignore_glob = ["test_*.py"]

# Real POLLUX criteria with a 0/1/2 scale, a binary one, and a 0..4 one is not needed here.
CRITERIA = ["repeats", "grammar", "censor"]


@dataclass
class ScriptedBackend:
    """Answers every item with `reply(item)` and parses it like a real backend does."""

    reply: Callable[[JudgeItem], str]
    calls: list[list[str]] = field(default_factory=list)

    def judge(self, items: Sequence[JudgeItem]) -> list[JudgeOutput]:
        self.calls.append([i.item_id for i in items])
        outputs = []
        for item in items:
            text = self.reply(item)
            outputs.append(
                JudgeOutput(
                    item_id=item.item_id,
                    raw_text=text,
                    parse=parse_judge_output(text, item.allowed_scores),
                    prompt_tokens=len(item.prompt) // 4,
                    generated_tokens=len(text) // 4,
                    seconds=0.01,
                )
            )
        return outputs


def result(score: Any) -> str:
    return f"[FEEDBACK] Ответ в целом корректен. [RESULT] {score} [END]"


@pytest.fixture
def judge_config(db: Any) -> Any:
    from judging.services import config_save

    return config_save(name="tiny", batch_size=2, model_family="giga")


_pseudonyms = itertools.count()


@dataclass
class Material:
    """Answers with triples of CRITERIA routed to panel A, and a pool of experts to score."""

    panel: Panel
    answers: list[Answer]
    experts: list[Expert]

    def triples(self) -> list[Triple]:
        return list(
            Triple.objects.filter(answer__in=self.answers).order_by("answer_id", "position")
        )

    def triple(self, answer: int, criterion: str) -> Triple:
        return Triple.objects.get(answer=self.answers[answer], criterion__key=criterion)

    def score(self, triple: Triple, *scores: int | None, rationale: str = "") -> None:
        """Submitted expert scores (None = not applicable) from the first experts of the pool."""
        now = timezone.now()
        for slot, (expert, score) in enumerate(zip(self.experts, scores, strict=False), 1):
            assignment, _ = Assignment.objects.get_or_create(
                expert=expert,
                answer=triple.answer,
                panel=self.panel,
                defaults={"status": AssignmentStatus.SUBMITTED, "submitted_at": now},
            )
            Estimate.objects.create(
                triple=triple,
                assignment=assignment,
                expert=expert,
                slot=slot,
                status=EstimateStatus.SUBMITTED,
                score=score,
                is_na=score is None,
                rationale=rationale or f"Обоснование эксперта {slot}: оценка {score}.",
                rubric=triple.rubric,
                submitted_at=now,
            )


@pytest.fixture
def material(personas: Any, make_answer: Callable[..., Answer]) -> Callable[..., Material]:
    def build(n_answers: int = 2, models: Sequence[str] = ("GigaChat", "YandexGPT")) -> Material:
        panel = personas.panel_a
        answers = [
            make_answer(model=models[i % len(models)], text="Ответ " + "слово " * (5 * (i + 1)))
            for i in range(n_answers)
        ]
        criteria = {c.key: c for c in Criterion.objects.filter(key__in=CRITERIA)}
        Triple.objects.bulk_create(
            Triple(
                answer=answer,
                criterion=criteria[key],
                rubric=criteria[key].rubric,
                group=criteria[key].group,
                panel=panel,
                required_overlap=3,
                position=pos,
            )
            for answer in answers
            for pos, key in enumerate(CRITERIA)
        )
        experts = [make_expert(f"judging_expert_{next(_pseudonyms)}", panel) for _ in range(3)]
        return Material(panel, answers, experts)

    return build


def stored_report(run: Any) -> dict[str, Any]:
    """The run's report as the page reads it: computed by the service and stored (JSON)."""
    from judging.services import report_compute

    data = report_compute(run_id=run.pk).data
    assert data is not None
    return data
