"""POLLUX-scale benchmark data in PostgreSQL, written with COPY (seconds, not minutes).

    python bench/datagen.py --scale full|small      # or, from another benchmark:
    from bench.datagen import ensure_dataset; ensure_dataset("full")

Full scale: ~2,100 instructions over real catalogue leaves, 11,500 answers of 6 models, the
criteria of each leaf via taxonomy.services.criteria_for (computed once per leaf and style):
~170,000 triples and ~490,000 submitted estimates with Russian rationales. Small: about 1/20.

Each scale has a database of its own, pollux_bench_<scale> (pollux_bench_full,
pollux_bench_small), so a small run never wipes the full data. BENCH_DATABASE_URL, when set,
overrides that with one database for every scale (a different scale then regenerates it).
A marker table remembers what was generated, so a second call with the same scale is a no-op.
Every sequence behind a table filled by COPY with explicit ids is moved past MAX(id), so later ORM
inserts in the bench database do not collide.
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
    "full": {
        "instructions": 2100,
        "answers": 11_500,
        "experts": 320,
        "triples": 170_000,
        "estimates": 490_000,
    },
    # Ten times POLLUX (issue #17): generated once into pollux_bench_10x (~4 GB, minutes).
    "10x": {
        "instructions": 21_000,
        "answers": 115_000,
        "experts": 3_200,
        "triples": 1_700_000,
        "estimates": 4_900_000,
    },
    "small": {
        "instructions": 105,
        "answers": 575,
        "experts": 60,
        "triples": 8_500,
        "estimates": 24_500,
    },
}
DEFAULT_URL = "postgres://postgres@127.0.0.1:5432/pollux_bench_{scale}"
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


def database_url(scale: str) -> str:
    """The bench database of `scale`: BENCH_DATABASE_URL if set, else pollux_bench_<scale>."""
    return os.environ.get("BENCH_DATABASE_URL") or DEFAULT_URL.format(scale=scale)


def _setup(scale: str) -> None:
    """Point Django (this process and the measured child processes) at the scale's database."""
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.bench")
    url = database_url(scale)
    # Children started by run_child inherit the environment, so they read the same database.
    os.environ["BENCH_DATABASE_URL"] = url
    _create_database(url)
    import django
    import environ
    from django.conf import settings

    if settings.configured and "default" in settings.DATABASES:
        # Settings were read before this call (another benchmark set Django up first): repoint
        # the default connection rather than silently generating into the wrong database.
        name = environ.Env.db_url_config(url)["NAME"]
        if settings.DATABASES["default"]["NAME"] != name:
            from django.db import connections

            connections["default"].close()
            settings.DATABASES["default"]["NAME"] = name
            connections["default"].settings_dict["NAME"] = name
    django.setup()


def _create_database(url: str) -> None:
    """CREATE DATABASE when the bench database does not exist yet."""
    import environ
    import psycopg

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

    from jobs.models import Job
    from material.models import Answer, Instruction, LanguageModel
    from panels.models import Expert, Membership
    from work.models import Triple

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
    _setup(scale)
    from django.core.management import call_command
    from django.db import connection, transaction

    call_command("migrate", verbosity=0)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s)", [LOCK_KEY])
    try:
        marker = _marker()
        if marker and marker["scale"] == scale and (marker["with_estimates"] or not with_estimates):
            return marker
        if marker and marker["scale"] != scale:
            print(
                f"bench: {database_url(scale)} holds the {marker['scale']} dataset; "
                f"regenerating it at {scale} scale",
                file=sys.stderr,
            )
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
        # VACUUM as well as ANALYZE: freshly COPYed rows carry no hint bits and no visibility map,
        # so the first scan after generation rewrites every page it reads (measured: the first
        # aggregation run after datagen took 13.1 s, later ones far less). Benchmarks measure the
        # steady state, not that one-time cost. (Django's connection is in autocommit here.)
        with connection.cursor() as cursor:
            cursor.execute("VACUUM (FREEZE, ANALYZE)")
        return {"scale": scale, "with_estimates": with_estimates, **stats}
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_unlock(%s)", [LOCK_KEY])


class _Instr:
    """What criteria_for needs of an instruction: its leaf task and functional style."""

    def __init__(self, task_id: int, style_id: int | None) -> None:
        self.task_id, self.style_id = task_id, style_id


def _leaf_weights(counts: list[float], mean: float) -> np.ndarray:
    """Probabilities proportional to exp(-lam * count), lam chosen so the expected count is mean."""
    c = np.asarray(counts, dtype=float)

    def weights(lam: float) -> np.ndarray:
        w = np.exp(-lam * (c - c.min()))
        return np.asarray(w / w.sum())

    lo, hi = -5.0, 5.0
    for _ in range(60):  # bisection: the expected count falls as lam grows
        mid = (lo + hi) / 2
        if float(weights(mid) @ c) > mean:
            lo = mid
        else:
            hi = mid
    return weights((lo + hi) / 2)


def _generate(scale: str, *, with_estimates: bool) -> dict[str, Any]:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.utils import timezone

    from material.models import Answer, Instruction, LanguageModel
    from panels.defaults import ensure_default_panels
    from panels.models import Expert, Membership, Panel
    from taxonomy.models import Criterion, FunctionalStyle, Task
    from taxonomy.services import criteria_for, load_pollux
    from work.models import Assignment, Estimate, Triple
    from work.routing import RoutingTable, overlap_for

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
        ],
        (
            (i + 1, first_user + i, f"E-B{i:06d}", "", "", "linguist", 2, "", "ru")
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
            memberships.append((i + 1, p, True, "[]", False, "", now))
    _copy(
        Membership._meta.db_table,
        [
            "expert_id",
            "panel_id",
            "qualified",
            "qualified_groups",
            "is_paused",
            "paused_reason",
            "joined_at",
        ],
        memberships,
    )

    models = [LanguageModel.objects.create(name=name, version="2025") for name in MODELS]

    # Instructions over real leaves; a fifth written in another functional style. Leaves are
    # drawn with weights leaning towards short criteria lists so that the answers' triples average
    # POLLUX's ~15 (uniform leaves average ~18, which overshoots ~170,000 triples by a fifth).
    leaves = list(Task.objects.filter(is_leaf=True).values_list("pk", "style_id"))
    styles = list(FunctionalStyle.objects.values_list("pk", flat=True))
    # Expected set size of a leaf: its own style 80 % of the time, another style 20 %.
    expected = [
        0.8 * len(criteria_for(_Instr(*leaf)))
        + 0.2 * float(np.mean([len(criteria_for(_Instr(leaf[0], st))) for st in styles]))
        for leaf in leaves
    ]
    leaf_weights = _leaf_weights(expected, size["triples"] / size["answers"])
    instr_rows = []
    instr_meta: list[tuple[int, int | None]] = []
    for i in range(size["instructions"]):
        leaf_id, leaf_style = leaves[int(rng.choice(len(leaves), p=leaf_weights))]
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
    del answer_rows

    # Triples: criteria_for once per (leaf, style), routing in memory.
    routing = RoutingTable.load()
    sets: dict[tuple[int, int | None], list[tuple[Criterion, int, int]]] = {}

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
        reset_sequences()
        return stats

    # Estimates: the overlap of the group, thinned to the target count.
    # Each triple gets its overlap (capped by its panel's pool) with probability keep_share, else
    # one fewer: keep_share is set so the expected total is the target.
    full_k = np.array([min(t[5], len(pools[t[3]] or pools[panels[0]])) for t in triple_info])
    less_k = np.minimum(np.maximum(1, full_k - 1), full_k)
    spread = float(full_k.sum() - less_k.sum())
    keep_share = float(np.clip((size["estimates"] - less_k.sum()) / max(spread, 1.0), 0.0, 1.0))
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
    reset_sequences()
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


def reset_sequences() -> None:
    """Move the id sequence of every table the generator fills past its MAX(id).

    COPY with explicit ids bypasses the sequences; without this, the next ORM insert (another
    benchmark creating experts or answers in the bench database) collides with a generated row.
    """
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.db.models import Model

    from material.models import Answer, Instruction, LanguageModel
    from panels.models import Expert, Membership
    from work.models import Assignment, Estimate, Triple

    models: list[type[Model]] = [
        get_user_model(),
        Expert,
        Membership,
        LanguageModel,
        Instruction,
        Answer,
        Triple,
        Assignment,
        Estimate,
    ]
    with connection.cursor() as cursor:
        for model in models:
            table = model._meta.db_table
            cursor.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "  # noqa: S608 (trusted table names)
                f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--no-estimates", action="store_true")
    args = parser.parse_args()
    print(ensure_dataset(args.scale, with_estimates=not args.no_estimates))


if __name__ == "__main__":
    main()
