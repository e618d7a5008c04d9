"""Import benchmark: POLLUX-sized material (2,100 instructions, 11,500 answers) from files.

Workload: one row per answer, POLLUX column names (task_type / task_subtype / task_subsubtype,
difficulty, domain, model_id), Russian texts of POLLUX-like length (instruction ~1,200
characters, answer ~3,000). The same rows are written as Parquet and CSV and imported into an
empty database with :func:`material.importing.material_import`; then each file is imported a
second time (finds everything, creates nothing).

Baseline: the obvious per-row ORM import (get_or_create of the instruction, the model and the
answer for every row), run on the same rows. It is run on a tenth of the rows at full scale
(it is slow) and extrapolated linearly, which flatters it (its per-row cost does not fall).

Run: ``python bench/run.py import-material --scale small|full`` (needs NAME in bench/run.py)
or ``python bench/import_material.py --scale full`` against the bench database
(``BENCH_DATABASE_URL``, default postgres://postgres@127.0.0.1:5432/pollux_bench).
The last line is ``import-material: VALUE s (baseline VALUE s, ratio R)`` for the Parquet
import of all answers.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import os
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCALES = {"small": (90, 500), "full": (2100, 11500)}
SOURCE = "bench-import"
MODELS = ["o1", "claude-3.5-sonnet", "gpt-4o", "llama-3.1-405b", "gigachat-max", "yandexgpt-4-pro"]
WORDS = [
    *("модель", "текст", "задание", "ответ", "пример", "анализ", "результат", "метод"),
    *("данные", "вопрос", "система", "структура", "процесс", "значение", "условие"),
    *("решение", "функция", "элемент", "уровень", "основа"),
]


def _setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.bench")
    import django

    django.setup()
    from django.core.management import call_command

    from taxonomy.models import Criterion
    from taxonomy.services import load_pollux

    call_command("migrate", verbosity=0)
    if not Criterion.objects.exists():
        load_pollux()


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def _rows(n_instructions: int, n_answers: int) -> list[dict[str, Any]]:
    from taxonomy.models import Task

    rng = random.Random(20250531)
    leaves = list(Task.objects.filter(is_leaf=True).select_related("parent__parent", "style"))
    rows: list[dict[str, Any]] = []
    per = [n_answers // n_instructions] * n_instructions
    for i in range(n_answers - sum(per)):
        per[i] += 1
    for i in range(n_instructions):
        leaf = leaves[i % len(leaves)]
        lineage = [n.name_en for n in leaf.lineage()]
        names = [*lineage, "", ""][:3]
        instruction = f"[{i}] " + _text(rng, rng.randint(400, 2000))
        reference = _text(rng, 600) if leaf.has_gold else ""
        difficulty = rng.choice(["Easy", "Medium", "Hard"])
        for m in range(per[i]):
            rows.append(
                {
                    "instruction": instruction,
                    "reference_answer": reference,
                    "answer": _text(rng, rng.randint(1000, 5000)),
                    "model_id": MODELS[m % len(MODELS)],
                    "task_type": names[0],
                    "task_subtype": names[1],
                    "task_subsubtype": names[2],
                    "difficulty": difficulty,
                    "domain": leaf.style.name_ru if leaf.style else "",
                    "source": SOURCE,
                }
            )
    return rows


def _criteria_names(n: int) -> list[str]:
    from taxonomy.models import Criterion

    return list(Criterion.objects.order_by("key").values_list("name_ru", flat=True)[:n])


def _write_parquet(rows: list[dict[str, Any]], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist(rows), path)


def _write(rows: list[dict[str, Any]], directory: Path) -> tuple[Path, Path]:
    parquet = directory / "material.parquet"
    _write_parquet(rows, parquet)
    csv_path = directory / "material.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return parquet, csv_path


def _clean() -> None:
    from material.models import Instruction, LanguageModel

    Instruction.objects.filter(source=SOURCE).delete()
    LanguageModel.objects.filter(name__in=MODELS, answers__isnull=True).delete()


def _timed_import(path: Path, expect_answers: int) -> tuple[float, float]:
    from material.importing import material_import

    _clean()
    started = time.perf_counter()
    report = material_import(path=path)
    first = time.perf_counter() - started
    assert report.ok, report.errors[:3]
    assert report.created["answers"] == expect_answers, report.created
    started = time.perf_counter()
    again = material_import(path=path)
    second = time.perf_counter() - started
    assert again.ok and again.created["answers"] == 0, again.created
    return first, second


def _baseline(rows: list[dict[str, Any]]) -> float:
    """The per-row ORM import a first version would write (the catalogue lookups cached)."""
    from django.db import transaction

    from material.models import Answer, Instruction, LanguageModel
    from taxonomy.models import FunctionalStyle, Task

    _clean()
    leaf_by_names = {
        tuple(n.name_en for n in t.lineage()): t for t in Task.objects.filter(is_leaf=True)
    }
    styles = {s.name_ru: s for s in FunctionalStyle.objects.all()}
    started = time.perf_counter()
    with transaction.atomic():
        for row in rows:
            names = tuple(
                n for n in (row["task_type"], row["task_subtype"], row["task_subsubtype"]) if n
            )
            task = leaf_by_names[names]
            instruction, _ = Instruction.objects.get_or_create(
                text=row["instruction"],
                task=task,
                defaults={
                    "reference_answer": row["reference_answer"],
                    "style": styles.get(row["domain"]),
                    "complexity": row["difficulty"].lower(),
                    "source": SOURCE,
                },
            )
            model, _ = LanguageModel.objects.get_or_create(name=row["model_id"], version="")
            Answer.objects.get_or_create(
                instruction=instruction,
                model=model,
                text_hash=hashlib.sha256(row["answer"].encode()).hexdigest(),
                defaults={"text": row["answer"]},
            )
    return time.perf_counter() - started


def main(scale: str = "small") -> str:
    _setup()
    n_instructions, n_answers = SCALES[scale]
    rows = _rows(n_instructions, n_answers)
    with tempfile.TemporaryDirectory() as tmp:
        parquet, csv_path = _write(rows, Path(tmp))
        mb = {p.suffix: p.stat().st_size / 1e6 for p in (parquet, csv_path)}
        parquet_s, parquet_again = _timed_import(parquet, n_answers)
        csv_s, csv_again = _timed_import(csv_path, n_answers)
        # The public dataset's shape: one row per (answer, criterion), ~16 criteria an answer.
        per_criterion = [
            {**row, "criteria_name": name} for row in rows for name in _criteria_names(16)
        ]
        pollux_path = Path(tmp) / "per_criterion.parquet"
        _write_parquet(per_criterion, pollux_path)
        pollux_s, _again = _timed_import(pollux_path, n_answers)
    sample = rows if scale == "small" else rows[: len(rows) // 10]
    baseline_s = _baseline(sample) * len(rows) / len(sample)
    _clean()
    print(
        f"{n_answers} answers / {n_instructions} instructions: "
        f"parquet ({mb['.parquet']:.0f} MB) {parquet_s:.2f} s, re-import {parquet_again:.2f} s; "
        f"csv ({mb['.csv']:.0f} MB) {csv_s:.2f} s, re-import {csv_again:.2f} s; "
        f"POLLUX-shaped parquet ({len(per_criterion)} rows, one per criterion) {pollux_s:.2f} s; "
        f"per-row ORM baseline {baseline_s:.1f} s (from {len(sample)} rows)",
        flush=True,
    )
    return (
        f"import-material: {parquet_s:.2f} s (baseline {baseline_s:.2f} s, "
        f"ratio {baseline_s / parquet_s:.1f})"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    print(main(parser.parse_args().scale), flush=True)
