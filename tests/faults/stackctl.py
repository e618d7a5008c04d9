"""Setup and bookkeeping inside the fault stack (run as a subprocess with the stack's settings).

    python -m tests.faults.stackctl bootstrap
    python -m tests.faults.stackctl experts PREFIX N_EXPERTS ANSWERS_PER_EXPERT
    python -m tests.faults.stackctl stored PREFIX
    python -m tests.faults.stackctl build-job N_ANSWERS
    python -m tests.faults.stackctl export-job
    python -m tests.faults.stackctl job JOB_ID
    python -m tests.faults.stackctl requeue-stale SECONDS

Each prints one JSON line.
"""

from __future__ import annotations

import json
import sys
from typing import Any

import django

PASSWORD = "faults-expert-pass"


def bootstrap() -> dict[str, Any]:
    from panels.defaults import ensure_default_panels
    from taxonomy.models import Criterion
    from taxonomy.services import load_pollux

    if not Criterion.objects.exists():
        load_pollux()
    ensure_default_panels()
    return {"ok": True}


def _answers(prefix: str, n: int) -> list[int]:
    from material.models import Answer, Instruction, LanguageModel
    from taxonomy.models import Task

    task = Task.objects.get(
        is_leaf=True, path__endswith="Original Text Generation / Scientific text / Academic text"
    )
    lm, _ = LanguageModel.objects.get_or_create(name="FaultModel", version="1")
    instruction, _ = Instruction.objects.get_or_create(
        external_id=f"{prefix}-instruction",
        defaults={"text": "Напишите аннотацию статьи.", "task": task, "style": task.style},
    )
    made = Answer.objects.bulk_create(
        [
            Answer(
                instruction=instruction,
                model=lm,
                text=f"Ответ модели номер {i}.",
                text_hash=f"{prefix}-{i}",
                external_id=f"{prefix}-answer-{i}",
            )
            for i in range(n)
        ]
    )
    return [a.pk for a in made]


def experts(prefix: str, n_experts: int, per_expert: int) -> dict[str, Any]:
    """n experts of the science panel, each with about per_expert answers of their own."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from panels.models import Expert, Membership, Panel
    from work.assignments import assignments_build
    from work.models import Assignment

    panel = Panel.objects.get(key="science")
    with transaction.atomic():
        # Earlier scenarios' experts must not receive this scenario's answers.
        Membership.objects.exclude(expert__user__username__startswith=prefix).update(is_paused=True)
        names = []
        for i in range(n_experts):
            user = get_user_model().objects.create_user(f"{prefix}{i}", password=PASSWORD)
            expert = Expert.objects.create(user=user, profession="faults")
            Membership.objects.create(expert=expert, panel=panel)
            names.append(user.username)
        # Overlap is at least 2 on the panel's criteria: each answer goes to two experts.
        ids = _answers(prefix, max(1, n_experts * per_expert // 2))
        assignments_build(answer_ids=ids)
    n = Assignment.objects.filter(expert__user__username__startswith=prefix).count()
    return {"usernames": names, "assignments": n}


def stored(prefix: str) -> dict[str, Any]:
    from django.db.models import Count

    from work.models import Assignment, Estimate, EstimateRevision

    mine = Assignment.objects.filter(expert__user__username__startswith=prefix)
    submitted = list(mine.filter(status="submitted").values_list("pk", flat=True))
    per_triple = (
        Estimate.objects.filter(assignment__in=mine, status="submitted")
        .values("triple_id", "expert_id")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count()
    )
    return {
        "submitted_assignments": submitted,
        "submitted_estimates": Estimate.objects.filter(
            assignment__in=mine, status__in=["submitted", "skipped"]
        ).count(),
        "open_estimates_of_submitted": Estimate.objects.filter(
            assignment__in=mine.filter(status="submitted"), status__in=["pending", "draft"]
        ).count(),
        "revisions": EstimateRevision.objects.filter(estimate__assignment__in=mine).count(),
        "duplicate_estimates": per_triple,
    }


def build_job(n_answers: int) -> dict[str, Any]:
    from django.db import transaction

    from jobs.models import Job, JobKind
    from jobs.services import enqueue
    from work.models import Estimate

    ids = _answers(f"build{Job.objects.count()}", n_answers)
    with transaction.atomic():
        job = enqueue(JobKind.ASSIGNMENTS, {"answer_ids": ids})
    return {"job": job.pk, "answers": ids, "estimates_before": Estimate.objects.count()}


# Enough scores for an export of about twenty chunks whatever ran on the stack before.
MIN_EXPORT_ROWS = 100


def _submitted(prefix: str, n_experts: int, per_expert: int) -> None:
    """Experts of their own with every assignment submitted (the best score, a rationale)."""
    from work.models import Assignment
    from work.services import ScoreInput, assignment_submit

    experts(prefix, n_experts, per_expert)
    for assignment in Assignment.objects.filter(
        expert__user__username__startswith=prefix
    ).select_related("expert__user"):
        items = [
            ScoreInput(
                triple_id=e.triple_id,
                score=e.triple.rubric.best_value,
                rationale="Оценка для проверки выгрузки.",
            )
            for e in assignment.estimates.select_related("triple__rubric")
            if e.triple.rubric is not None
        ]
        result = assignment_submit(assignment=assignment, items=items, user=assignment.expert.user)
        assert result.ok, result


def export_job() -> dict[str, Any]:
    from dataset.tasks import dataset_job_create
    from jobs.models import JobKind
    from work.models import Estimate

    # The stack's worker runs the slow export (tests/faults/slow_export.py: a second per chunk),
    # so the kill lands mid-way. The stack is shared by every fault test and the load smoke: the
    # chunk grows with what they stored, so the export takes about twenty chunks (seconds)
    # whatever ran before it.
    rows = Estimate.objects.filter(status="submitted").count()
    if rows < MIN_EXPORT_ROWS:
        # Run alone, the stack holds no scores yet: store some, so the export has chunks.
        _submitted("fexport", 4, 4)
        rows = Estimate.objects.filter(status="submitted").count()
    job = dataset_job_create(
        kind=JobKind.EXPORT,
        user=None,
        params={
            "format": "xlsx",
            "min_estimates": 1,
            "chunk_rows": max(5, rows // 20),
        },
    )
    return {"job": job.pk}


def job(job_id: int) -> dict[str, Any]:
    from pathlib import Path

    from django.conf import settings
    from django.db.models import Count

    from jobs.models import Job
    from work.models import Assignment, Estimate

    row = Job.objects.get(pk=job_id)
    answers = row.params.get("answer_ids") or []
    exports = sorted(p.name for p in (Path(settings.PRIVATE_STORAGE_ROOT) / "exports").glob("*"))
    return {
        "status": row.status,
        "attempts": row.attempts,
        "progress_done": row.progress_done,
        "message": row.message,
        "file_path": row.file_path,
        "files": exports,
        "assignments": Assignment.objects.filter(answer_id__in=answers).count(),
        "estimates": Estimate.objects.filter(triple__answer_id__in=answers).count(),
        # Overfilled slots would mean a redelivered build ran twice.
        "over_slots": Estimate.objects.filter(triple__answer_id__in=answers)
        .values("triple_id", "slot")
        .annotate(n=Count("id"))
        .filter(n__gt=1)
        .count(),
    }


def requeue_stale(seconds: float) -> dict[str, Any]:
    from datetime import timedelta

    from jobs.services import jobs_requeue_stale

    return {"sent": jobs_requeue_stale(stale_after=timedelta(seconds=seconds))}


def main(argv: list[str]) -> None:
    django.setup()
    command, args = argv[0], argv[1:]
    if command == "bootstrap":
        out = bootstrap()
    elif command == "experts":
        out = experts(args[0], int(args[1]), int(args[2]))
    elif command == "stored":
        out = stored(args[0])
    elif command == "build-job":
        out = build_job(int(args[0]))
    elif command == "export-job":
        out = export_job()
    elif command == "job":
        out = job(int(args[0]))
    elif command == "requeue-stale":
        out = requeue_stale(float(args[0]))
    else:
        raise SystemExit(f"unknown command {command}")
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main(sys.argv[1:])
