"""POLLUX-scale benchmark data in PostgreSQL, written with COPY (seconds, not minutes).

    python bench/datagen.py --scale full|small      # or, from another benchmark:
    from bench.datagen import ensure_dataset; ensure_dataset("full")

Full scale: ~2,100 instructions over real catalogue leaves, 11,500 answers of 6 models, the
criteria of each leaf via taxonomy.services.criteria_for (computed once per leaf and style):
~170,000 triples and ~490,000 submitted estimates with Russian rationales. Small: about 1/20.
The database is BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/pollux_bench).
A marker table remembers what was generated, so a second call with the same scale is a no-op.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
SCALES = {
    "full": {"instructions": 2100, "answers": 11_500, "experts": 320, "estimates": 490_000},
    "small": {"instructions": 105, "answers": 575, "experts": 60, "estimates": 24_500},
}
MODELS = [
    "GigaChat-Max",
    "YandexGPT-5-Pro",
    "GPT-4o",
    "Claude-3.5-Sonnet",
    "Llama-3.1-405B",
    "T-pro-it-1.0",
]
MARKER = "bench_dataset_marker"
LOCK_KEY = 7_340_001  # pg advisory lock: two benchmarks never generate at once

WORDS = [
    "ответ",
    "модели",
    "текст",
    "задача",
    "критерий",
    "автор",
    "статья",
    "вывод",
    "пример",
    "данные",
    "анализ",
    "результат",
    "метод",
    "исследование",
    "вопрос",
    "решение",
    "структура",
    "логика",
    "стиль",
    "фраза",
    "абзац",
    "смысл",
    "ошибка",
    "точность",
    "полнота",
    "описание",
    "источник",
    "термин",
    "понятие",
    "явление",
    "процесс",
    "система",
    "часть",
    "важный",
    "новый",
    "полный",
    "краткий",
    "ясный",
    "научный",
    "деловой",
    "простой",
    "сложный",
    "верный",
    "основной",
    "который",
    "этот",
    "также",
    "однако",
    "поэтому",
    "кроме",
    "того",
    "например",
    "именно",
    "вполне",
    "почти",
    "очень",
    "рассказ",
    "сюжет",
    "герой",
    "событие",
    "время",
    "место",
    "город",
    "страна",
    "история",
    "культура",
    "язык",
    "речь",
    "письмо",
    "документ",
    "договор",
    "закон",
    "право",
    "рынок",
    "компания",
    "проект",
    "план",
    "цель",
    "задача",
    "шаг",
]
RATIONALE_OPENERS = [
    "Ответ полностью соответствует критерию",
    "В ответе есть незначительные неточности",
    "Модель допустила ошибку в",
    "Текст логичен и последователен",
    "Не хватает примеров и пояснений",
    "Формулировки точные, стиль выдержан",
    "Есть повторы и лишние слова",
    "Ответ не раскрывает тему",
    "Критерий неприменим к данному заданию",
    "Грамматических ошибок не обнаружено",
]


def _setup() -> None:
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.bench")
    _create_database()
    import django

    django.setup()


def _create_database() -> None:
    """CREATE DATABASE when the bench database does not exist yet."""
    import environ
    import psycopg

    url = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/pollux_bench")
    cfg = environ.Env.db_url_config(url)
    name = cfg["NAME"]
    with psycopg.connect(
        host=cfg.get("HOST") or "127.0.0.1",
        port=int(cfg.get("PORT") or 5432),
        user=cfg.get("USER") or "postgres",
        password=cfg.get("PASSWORD") or None,
        dbname="postgres",
        autocommit=True,
    ) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')


def _text(rng: np.random.Generator, chars: int) -> str:
    n = max(3, chars // 8)
    words = rng.choice(len(WORDS), size=n)
    text = " ".join(WORDS[i] for i in words.tolist())
    return text[:1].upper() + text[1:] + "."


def _copy(table: str, columns: list[str], rows: Any) -> None:
    """COPY rows in; columns the caller does not give get the model field's default, so fields
    added to the models later do not break the generator."""
    from django.apps import apps
    from django.db import connection

    extra: list[str] = []
    defaults: tuple[Any, ...] = ()
    model = next((m for m in apps.get_models() if m._meta.db_table == table), None)
    if model is not None:
        given = {c.strip('"') for c in columns}
        fields = [
            f
            for f in model._meta.concrete_fields
            if f.column not in given and not f.primary_key and not f.null
        ]
        extra = [f'"{f.column}"' for f in fields]
        defaults = tuple(f.get_db_prep_save(f.get_default(), connection) for f in fields)
    with (
        connection.cursor() as cursor,
        cursor.copy(f"COPY {table} ({', '.join(columns + extra)}) FROM STDIN") as copy,
    ):
        for row in rows:
            copy.write_row(tuple(row) + defaults)


def _marker() -> dict[str, Any] | None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"CREATE TABLE IF NOT EXISTS {MARKER} (scale text primary key, "
            "with_estimates boolean, stats jsonb, created_at timestamptz default now())"
        )
        cursor.execute(f"SELECT scale, with_estimates, stats FROM {MARKER}")  # noqa: S608 (trusted table names)
        row = cursor.fetchone()
    if row is None:
        return None
    import json

    stats = row[2] if isinstance(row[2], dict) else json.loads(row[2])
    return {"scale": row[0], "with_estimates": row[1], **stats}


def _wipe() -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotation.models import Answer, Instruction, Job, LanguageModel, Triple
    from panels.models import Expert, Membership

    tables = [
        m._meta.db_table
        for m in (Job, Triple, Answer, Instruction, LanguageModel, Membership, Expert)
    ]
    with connection.cursor() as cursor:
        cursor.execute(f"TRUNCATE {', '.join(tables)} RESTART IDENTITY CASCADE")
        cursor.execute(f"DELETE FROM {MARKER}")  # noqa: S608 (trusted table names)
    get_user_model().objects.filter(username__startswith="bench_").delete()


def ensure_dataset(scale: str, *, with_estimates: bool = True) -> dict[str, Any]:
    """Make sure the bench database holds the dataset of `scale`; returns its counts."""
    _setup()
    from django.core.management import call_command
    from django.db import connection, transaction

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
    try:
        marker = _marker()
        if marker and marker["scale"] == scale and (marker["with_estimates"] or not with_estimates):
            return marker
        started = time.perf_counter()
        with transaction.atomic():
            _wipe()
            stats = _generate(scale, with_estimates=with_estimates)
            stats["generation_s"] = round(time.perf_counter() - started, 1)
            import json

            with connection.cursor() as cursor:
                cursor.execute(
                    f"INSERT INTO {MARKER} (scale, with_estimates, stats) VALUES (%s, %s, %s)",  # noqa: S608 (trusted table names)
                    [scale, with_estimates, json.dumps(stats)],
                )
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        return {"scale": scale, "with_estimates": with_estimates, **stats}
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


def _generate(scale: str, *, with_estimates: bool) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from annotation.models import (
        Answer,
        Assignment,
        Estimate,
        Instruction,
        LanguageModel,
        Triple,
    )
    from annotation.routing import RoutingTable, overlap_for
    from panels.defaults import ensure_default_panels
    from panels.models import Expert, Membership, Panel
    from taxonomy.models import Criterion, FunctionalStyle, Task
    from taxonomy.services import criteria_for, load_pollux

    if not Criterion.objects.exists():
        load_pollux()
    ensure_default_panels()
    size = SCALES[scale]
    rng = np.random.default_rng(20250524)
    now = timezone.now()

    # Experts: each in one or two panels, every panel with a pool of at least six.
    panels = list(Panel.objects.order_by("number").values_list("pk", flat=True))
    user_table = get_user_model()._meta.db_table
    n_exp = size["experts"]
    first_user = _next_id(user_table)
    _copy(
        user_table,
        [
            "id",
            "password",
            "is_superuser",
            "username",
            "first_name",
            "last_name",
            "email",
            "is_staff",
            "is_active",
            "date_joined",
        ],
        (
            (first_user + i, "!", False, f"bench_{scale}_{i}", "", "", "", False, True, now)
            for i in range(n_exp)
        ),
    )
    _copy(
        Expert._meta.db_table,
        [
            "id",
            "user_id",
            "pseudonym",
            "education",
            "field_of_expertise",
            "profession",
            "llm_experience_years",
            "region",
            "languages",
            "is_paused",
            "paused_reason",
        ],
        (
            (i + 1, first_user + i, f"E-B{i:06d}", "", "", "linguist", 2, "", "ru", False, "")
            for i in range(n_exp)
        ),
    )
    pools: dict[int, list[int]] = {p: [] for p in panels}
    memberships = []
    for i in range(n_exp):
        chosen = {panels[i % len(panels)]}
        if rng.random() < 0.4:
            chosen.add(panels[int(rng.integers(len(panels)))])
        for p in chosen:
            pools[p].append(i + 1)
            memberships.append((i + 1, p, True, "[]", now))
    _copy(
        Membership._meta.db_table,
        ["expert_id", "panel_id", "qualified", "qualified_groups", "joined_at"],
        memberships,
    )
    _reset_sequence(Expert._meta.db_table)

    models = [LanguageModel.objects.create(name=name, version="2025") for name in MODELS]

    # Instructions over real leaves; a fifth written in another functional style.
    leaves = list(Task.objects.filter(is_leaf=True).values_list("pk", "style_id"))
    styles = list(FunctionalStyle.objects.values_list("pk", flat=True))
    instr_rows = []
    instr_meta: list[tuple[int, int | None]] = []
    for i in range(size["instructions"]):
        leaf_id, leaf_style = leaves[int(rng.integers(len(leaves)))]
        style = leaf_style
        if rng.random() < 0.2:
            style = styles[int(rng.integers(len(styles)))]
        length = int(np.clip(rng.lognormal(6.2, 0.7), 60, 8000))
        reference = _text(rng, int(length * 1.5)) if rng.random() < 0.3 else ""
        instr_rows.append(
            (
                i + 1,
                f"bench-i-{i}",
                _text(rng, length),
                reference,
                leaf_id,
                style,
                ["easy", "medium", "hard"][i % 3],
                False,
                "",
                "bench",
                now,
            )
        )
        instr_meta.append((leaf_id, style))
    _copy(
        Instruction._meta.db_table,
        [
            "id",
            "external_id",
            "text",
            "reference_answer",
            "task_id",
            "style_id",
            "complexity",
            "ethics_flag",
            "author",
            "source",
            "created_at",
        ],
        instr_rows,
    )
    _reset_sequence(Instruction._meta.db_table)

    # Answers: spread over the instructions, each instruction answered by distinct models.
    n_ans = size["answers"]
    answer_instr = np.sort(rng.integers(0, size["instructions"], size=n_ans))
    answer_rows = []
    answer_model = []
    seen: dict[int, int] = {}
    for a, inst in enumerate(answer_instr.tolist()):
        k = seen.get(inst, 0)
        seen[inst] = k + 1
        model = models[(inst + k) % len(models)].pk
        length = int(np.clip(rng.lognormal(7.3, 0.6), 100, 20_000))
        answer_rows.append(
            (a + 1, f"bench-a-{a}", inst + 1, model, _text(rng, length), "{}", f"h{a}-{k}", now)
        )
        answer_model.append(model)
    _copy(
        Answer._meta.db_table,
        [
            "id",
            "external_id",
            "instruction_id",
            "model_id",
            "text",
            "generation_meta",
            "text_hash",
            "created_at",
        ],
        answer_rows,
    )
    _reset_sequence(Answer._meta.db_table)
    del answer_rows

    # Triples: criteria_for once per (leaf, style), routing in memory.
    routing = RoutingTable.load()
    sets: dict[tuple[int, int | None], list[tuple[Criterion, int, int]]] = {}

    class _Instr:
        def __init__(self, task_id: int, style_id: int | None) -> None:
            self.task_id, self.style_id = task_id, style_id

    triple_rows = []
    # id, answer, group, panel, top score, overlap, rubric, lowest score
    triple_info: list[tuple[int, int, str, int, int, int, int | None, int]] = []
    tid = 0
    for a, inst in enumerate(answer_instr.tolist()):
        key = instr_meta[inst]
        if key not in sets:
            crits = criteria_for(_Instr(*key))
            sets[key] = [(c, routing.panel_for(c, key[0], key[1]), overlap_for(c)) for c in crits]
        for pos, (crit, panel, overlap) in enumerate(sets[key]):
            tid += 1
            assert crit.rubric is not None
            triple_rows.append(
                (tid, a + 1, crit.pk, crit.rubric_id, crit.group, panel, overlap, pos, "")
            )
            triple_info.append(
                (
                    tid,
                    a + 1,
                    crit.group,
                    panel,
                    crit.rubric.max_value,
                    overlap,
                    crit.rubric_id,
                    min(crit.rubric.values),
                )
            )
    _copy(
        Triple._meta.db_table,
        [
            "id",
            "answer_id",
            "criterion_id",
            "rubric_id",
            '"group"',
            "panel_id",
            "required_overlap",
            "position",
            "reopened_note",
        ],
        triple_rows,
    )
    _reset_sequence(Triple._meta.db_table)
    n_triples = len(triple_rows)
    del triple_rows
    stats: dict[str, Any] = {
        "instructions": size["instructions"],
        "answers": n_ans,
        "triples": n_triples,
        "experts": n_exp,
        "estimates": 0,
    }
    if not with_estimates:
        return stats

    # Estimates: the overlap of the group, thinned to the target count.
    overlaps = np.array([t[5] for t in triple_info])
    keep_share = min(1.0, size["estimates"] / overlaps.sum())
    rationale_pool = [
        f"{RATIONALE_OPENERS[i % len(RATIONALE_OPENERS)]} {_text(rng, int(rng.integers(20, 220)))}"
        for i in range(5000)
    ]
    bad_pool = ["ok", "Хорошо", "Fine answer, no issues", "", "—"]
    violating_answers = set(rng.choice(n_ans, size=max(1, n_ans // 40), replace=False).tolist())
    assignments: dict[tuple[int, int, int], int] = {}
    est_rows = []
    eid = 0
    for tid, answer, group, panel, top, overlap, rubric, low in triple_info:
        k = overlap if rng.random() < keep_share else max(1, overlap - 1)
        pool = pools[panel] or pools[panels[0]]
        start = int(rng.integers(len(pool)))
        latent = int(rng.integers(low, top + 1))
        if group == "critical":
            latent = top if (answer - 1) in violating_answers else low
        for j in range(min(k, len(pool))):
            expert = pool[(start + j) % len(pool)]
            akey = (expert, answer, panel)
            if akey not in assignments:
                assignments[akey] = len(assignments) + 1
            eid += 1
            is_na = group in ("domain", "task") and rng.random() < 0.03
            score = (
                None
                if is_na
                else (latent if rng.random() < 0.7 else int(rng.integers(low, top + 1)))
            )
            if group == "critical" and not is_na:
                score = latent if rng.random() < 0.85 else low
            if rng.random() < 0.02:
                text = bad_pool[int(rng.integers(len(bad_pool)))]
            else:
                text = rationale_pool[int(rng.integers(len(rationale_pool)))]
            submitted = now
            est_rows.append(
                (
                    eid,
                    tid,
                    assignments[akey],
                    expert,
                    j + 1,
                    "submitted",
                    score,
                    is_na,
                    text,
                    rubric,
                    int(rng.integers(10_000, 600_000)),
                    1,
                    submitted,
                    submitted,
                )
            )
    # Consecutive experts of the pool: distinct per triple, as the unique constraint wants.
    _copy(
        Assignment._meta.db_table,
        [
            "id",
            "expert_id",
            "answer_id",
            "panel_id",
            "kind",
            "status",
            "created_at",
            "submitted_at",
            "time_spent_ms",
            "critical_stop",
            "locked",
        ],
        (
            (aid, e, a, p, "work", "submitted", now, now, 0, False, False)
            for (e, a, p), aid in assignments.items()
        ),
    )
    _reset_sequence(Assignment._meta.db_table)
    _copy(
        Estimate._meta.db_table,
        [
            "id",
            "triple_id",
            "assignment_id",
            "expert_id",
            "slot",
            "status",
            "score",
            "is_na",
            "rationale",
            "rubric_id",
            "time_spent_ms",
            "revision",
            "updated_at",
            "submitted_at",
        ],
        est_rows,
    )
    _reset_sequence(Estimate._meta.db_table)
    stats["estimates"] = len(est_rows)
    stats["assignments"] = len(assignments)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        stats["database_size"] = cursor.fetchone()[0]
    return stats


def _next_id(table: str) -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {table}")  # noqa: S608 (trusted table names)
        return int(cursor.fetchone()[0])


def _reset_sequence(table: str) -> None:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 (trusted table names)
            f"(SELECT COALESCE(MAX(id), 1) FROM {table}))"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--no-estimates", action="store_true")
    args = parser.parse_args()
    print(ensure_dataset(args.scale, with_estimates=not args.no_estimates))


if __name__ == "__main__":
    main()


# --------------------------------------------------------------------------------------------
# Shared by the dataset benchmarks: run one measured step in a fresh process.
# --------------------------------------------------------------------------------------------


def run_child(module: str, step: str, scale: str, timeout: float = 1800) -> dict[str, Any]:
    """Run `module.step(scale)` in a new Python process; returns its wall time and peak RSS.

    A fresh process per step, so each peak is its own: ru_maxrss (resource.getrusage, the
    child's RUSAGE_SELF at exit, Linux kilobytes) is the whole process's high-water mark,
    Python, Django and the libraries included.
    """
    import json
    import subprocess

    code = (
        "import json, os, resource, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n"
        "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings.bench')\n"
        "import django; django.setup()\n"
        f"import {module} as m\n"
        "t = time.perf_counter()\n"
        f"extra = m.{step}({scale!r})\n"
        "s = time.perf_counter() - t\n"
        "rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print('RESULT ' + json.dumps({'seconds': s, 'peak_mb': rss, 'extra': extra}))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        check=False,
    )
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("RESULT "):
            return dict(json.loads(line[7:]))
    raise RuntimeError(f"{module}.{step} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")


def result_line(name: str, fast: dict[str, Any], naive: dict[str, Any]) -> str:
    ratio = naive["seconds"] / fast["seconds"] if fast["seconds"] else float("inf")
    return (
        f"{name}: {fast['seconds']:.2f} s (baseline {naive['seconds']:.2f} s, ratio {ratio:.1f}); "
        f"peak memory {fast['peak_mb']:.0f} MB (baseline {naive['peak_mb']:.0f} MB)"
    )
