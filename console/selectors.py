"""Reads of the supervisor console: progress, throughput, times, estimates lists and plot data.

Everything here aggregates in the database (COUNT / GROUP BY over indexed key columns) and never
loads rationale or answer text for a list: the console must stay fast at 500,000 estimates.
Exam and control copies (ReservedAnswer) are left out of every work statistic.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, Max, OuterRef, Q, QuerySet
from django.utils import timezone

from dataset.models import TripleAggregate
from lib.sql import fetch_all
from material.models import Answer, Instruction
from panels.models import Membership, Panel, SupervisorNotice
from quality.models import ControlItem, ControlStanding
from quality.pairwise import comparison_agreement
from quality.selectors import Agreement, expert_agreement
from taxonomy.models import GROUP_ORDER, ComparisonCriterion, Criterion, CriterionGroup, Task
from work.forms import parse_score
from work.models import (
    Assignment,
    Estimate,
    EstimateStatus,
    Flag,
    FlagKind,
    ReservedAnswer,
    Triple,
    TripleKind,
)
from work.selectors import blind_answer_ids

# The raw SQL below names tables by their models, so renaming one (Meta.db_table) cannot leave
# a query pointing at a table that is gone.
_ANSWER = Answer._meta.db_table
_ASSIGNMENT = Assignment._meta.db_table
_AGGREGATE = TripleAggregate._meta.db_table
_CONTROL_ITEM = ControlItem._meta.db_table
_CRITERION = Criterion._meta.db_table
_ESTIMATE = Estimate._meta.db_table
_INSTRUCTION = Instruction._meta.db_table
_RESERVED = ReservedAnswer._meta.db_table
_TRIPLE = Triple._meta.db_table


def panel_progress(panels: QuerySet[Panel]) -> list[dict[str, Any]]:
    """Triples required / estimates submitted per panel, counted without touching text columns."""

    rows = []
    gold = ControlItem.objects.filter(
        answer_id=OuterRef("answer_id"), panel_id=OuterRef("panel_id"), is_active=True
    )
    required = dict(
        Triple.objects.filter(panel__in=panels, answer__reserved__isnull=True)
        .exclude(Exists(gold))
        .values_list("panel")
        .annotate(n=Count("id"))
        .values_list("panel", "n")
    )
    submitted = dict(
        Estimate.objects.filter(
            triple__panel__in=panels,
            triple__answer__reserved__isnull=True,
            status__in=[EstimateStatus.SUBMITTED, EstimateStatus.SKIPPED],
        )
        .values_list("triple__panel")
        .annotate(n=Count("id"))
        .values_list("triple__panel", "n")
    )
    unread = dict(
        SupervisorNotice.objects.filter(panel__in=panels, read_at__isnull=True)
        .values_list("panel")
        .annotate(n=Count("id"))
        .values_list("panel", "n")
    )
    for panel in panels.annotate(n_experts=Count("memberships")):
        rows.append(
            {
                "panel": panel,
                "triples": required.get(panel.pk, 0),
                "estimates_done": submitted.get(panel.pk, 0),
                "experts": panel.n_experts,
                "notices": unread.get(panel.pk, 0),
            }
        )
    return rows


# One estimate row per counted vote; the NOT EXISTS leave exam and control copies out, and the
# panel's own gold answers (no more work of the panel on them: they would never be done). Rubric
# triples only: both breakdowns that read it (criterion group, POLLUX task) are rubric ones, and
# a side-by-side triple has no group (its query may have no task).
_DONE_PER_TRIPLE = f"""
    SELECT t.id, t."group", t.required_overlap, t.answer_id,
           COUNT(e.id) FILTER (WHERE e.status IN ('submitted', 'skipped')) AS done
    FROM {_TRIPLE} t
    LEFT JOIN {_ESTIMATE} e ON e.triple_id = t.id
    WHERE t.panel_id = %s AND t.kind = '{TripleKind.POINTWISE.value}'
      AND NOT EXISTS (SELECT 1 FROM {_RESERVED} r WHERE r.answer_id = t.answer_id)
      AND NOT EXISTS (SELECT 1 FROM {_CONTROL_ITEM} c WHERE c.answer_id = t.answer_id
                      AND c.panel_id = t.panel_id AND c.is_active)
    GROUP BY t.id
"""  # noqa: S608


@dataclass
class ProgressRow:
    key: str
    label: str
    required: int
    done: int

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.required) if self.required else 0


def progress_by_group(panel: Panel) -> list[ProgressRow]:
    """Triples done (all required votes in) / required, per criterion group."""

    rows = fetch_all(
        f"""SELECT "group", COUNT(*), COUNT(*) FILTER (WHERE done >= required_overlap)
            FROM ({_DONE_PER_TRIPLE}) x GROUP BY "group" """,  # noqa: S608 (constant SQL)
        [panel.pk],
    )
    labels = dict(CriterionGroup.choices)
    by_group = {g: (n, d) for g, n, d in rows}
    return [
        ProgressRow(key=g, label=str(labels[g]), required=by_group[g][0], done=by_group[g][1])
        for g in GROUP_ORDER
        if g in by_group
    ]


def localise_task_rows(rows: list[ProgressRow]) -> list[ProgressRow]:
    """Task labels in the active language (snapshots store the English path, keyed by task id)."""
    from dataclasses import replace

    ids = [int(r.key) for r in rows if str(r.key).isdigit()]
    tasks = {
        t.pk: t for t in Task.objects.filter(pk__in=ids).select_related("group", "parent__parent")
    }
    return [
        replace(r, label=tasks[int(r.key)].display_path()) if int(r.key) in tasks else r
        for r in rows
    ]


def progress_by_task(panel: Panel, limit: int = 200) -> list[ProgressRow]:
    """Triples done / required per leaf task of the instructions."""

    rows = fetch_all(
        f"""SELECT i.task_id, COUNT(*), COUNT(*) FILTER (WHERE x.done >= x.required_overlap)
            FROM ({_DONE_PER_TRIPLE}) x
            JOIN {_ANSWER} a ON a.id = x.answer_id
            JOIN {_INSTRUCTION} i ON i.id = a.instruction_id
            GROUP BY i.task_id ORDER BY COUNT(*) DESC LIMIT %s""",  # noqa: S608
        [panel.pk, limit],
    )
    names = {t.pk: t for t in Task.objects.filter(pk__in=[r[0] for r in rows]).only("path")}
    return [
        ProgressRow(key=str(task_id), label=names[task_id].path, required=n, done=d)
        for task_id, n, d in rows
        if task_id in names
    ]


def throughput_per_day(panel: Panel, days: int = 30) -> list[tuple[date, int]]:
    """Estimates submitted per day over the last `days` days (zeros included)."""
    since = timezone.now() - timedelta(days=days)
    rows = fetch_all(
        f"""SELECT DATE(e.submitted_at) AS d, COUNT(*)
           FROM {_ESTIMATE} e JOIN {_TRIPLE} t ON t.id = e.triple_id
           WHERE t.panel_id = %s AND e.status IN ('submitted', 'skipped')
             AND e.submitted_at >= %s
             AND NOT EXISTS (SELECT 1 FROM {_RESERVED} r WHERE r.answer_id = t.answer_id)
           GROUP BY d ORDER BY d""",  # noqa: S608
        [panel.pk, since],
    )
    # PostgreSQL returns dates, SQLite (the demo) ISO strings.
    counts = {d if isinstance(d, date) else date.fromisoformat(str(d)): n for d, n in rows}
    today = timezone.now().date()
    return [
        (today - timedelta(days=i), int(counts.get(today - timedelta(days=i), 0)))
        for i in range(days - 1, -1, -1)
    ]


def progress_over_time(
    panel: Panel, days: int = 30, series: list[tuple[date, int]] | None = None
) -> list[tuple[date, int]]:
    """Cumulative submitted estimates per day (the base before the window included)."""
    series = throughput_per_day(panel, days) if series is None else series
    if not series:
        return []
    before = fetch_all(
        f"""SELECT COUNT(*) FROM {_ESTIMATE} e
           JOIN {_TRIPLE} t ON t.id = e.triple_id
           WHERE t.panel_id = %s AND e.status IN ('submitted', 'skipped')
             AND e.submitted_at < %s
             AND NOT EXISTS (SELECT 1 FROM {_RESERVED} r WHERE r.answer_id = t.answer_id)
        """,  # noqa: S608
        [panel.pk, timezone.now() - timedelta(days=days)],
    )[0][0]
    total = int(before)
    out = []
    for day, n in series:
        total += n
        out.append((day, total))
    return out


def _median_times_portable(panel: Panel) -> dict[str, Any]:
    """The same figures computed in Python, for SQLite (the demo), which has no percentile_cont."""
    from statistics import median

    answer_times = list(
        Assignment.objects.filter(
            panel=panel, kind="work", status="submitted", pair__isnull=True
        ).values_list("time_spent_ms", flat=True)
    )
    per_criterion: dict[str, dict[str, Any]] = {}
    for key, en, ru, ms in (
        Estimate.objects.filter(
            triple__panel=panel, triple__kind=TripleKind.POINTWISE, status="submitted"
        )
        .exclude(triple__answer__reserved__isnull=False)
        .values_list("triple__criterion__key", "triple__criterion__name_en",
                     "triple__criterion__name_ru", "time_spent_ms")
    ):  # fmt: skip
        entry = per_criterion.setdefault(key, {"key": key, "name_en": en, "name_ru": ru, "t": []})
        entry["t"].append(ms)
    return {
        "answer_s": median(answer_times) / 1000 if answer_times else None,
        "answers": len(answer_times),
        "criteria": [
            {
                "key": e["key"],
                "name_en": e["name_en"],
                "name_ru": e["name_ru"],
                "median_s": median(e["t"]) / 1000,
                "n": len(e["t"]),
            }
            for e in sorted(per_criterion.values(), key=lambda e: e["key"])
        ],
    }


def median_times(panel: Panel) -> dict[str, Any]:
    """Median seconds per submitted answer (rubric work only) and per criterion.

    A side-by-side assignment (`pair` set) compares two answers on other criteria: its time is
    no answer's scoring time, and its triples have no rubric criterion.
    """
    if connection.vendor != "postgresql":
        return _median_times_portable(panel)
    per_answer = fetch_all(
        f"""SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY time_spent_ms), COUNT(*)
           FROM {_ASSIGNMENT}
           WHERE panel_id = %s AND kind = 'work' AND status = 'submitted'
             AND pair_id IS NULL""",  # noqa: S608
        [panel.pk],
    )[0]
    per_criterion = fetch_all(
        f"""SELECT c.key, c.name_en, c.name_ru,
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY e.time_spent_ms), COUNT(*)
           FROM {_ESTIMATE} e
           JOIN {_TRIPLE} t ON t.id = e.triple_id
           JOIN {_CRITERION} c ON c.id = t.criterion_id
           WHERE t.panel_id = %s AND e.status = 'submitted'
             AND NOT EXISTS (SELECT 1 FROM {_RESERVED} r WHERE r.answer_id = t.answer_id)
           GROUP BY c.id ORDER BY c.key""",  # noqa: S608
        [panel.pk],
    )
    return {
        "answer_s": (per_answer[0] or 0) / 1000 if per_answer[1] else None,
        "answers": per_answer[1],
        "criteria": [
            {"key": k, "name_en": en, "name_ru": ru, "median_s": (m or 0) / 1000, "n": n}
            for k, en, ru, m, n in per_criterion
        ],
    }


def panel_agreement(
    panel: Panel, expert_ids: list[int] | None = None
) -> dict[int, dict[str, Agreement]]:
    """Per expert and criterion group: agreement with co-raters on the panel's rubric triples
    (its side-by-side agreement is `comparison_agreement`'s, per criterion, below)."""
    return expert_agreement(panel, expert_ids)


def expert_rows(
    panel: Panel,
    memberships: list[Membership],
    agreement: dict[int, dict[str, Agreement]] | None = None,
) -> list[dict[str, Any]]:
    """Load, done, control accuracy, agreement and status of one page of experts.

    Pass the snapshot's agreement (PanelStats): computing it live scans the panel's estimates.
    """

    ids = [m.expert_id for m in memberships]
    counts = {
        row["expert_id"]: row
        for row in Estimate.objects.filter(
            expert_id__in=ids,
            triple__panel=panel,
            assignment__kind="work",
        )
        .values("expert_id")
        .annotate(
            open=Count("id", filter=Q(status__in=["pending", "draft"])),
            done=Count("id", filter=Q(status__in=["submitted", "skipped"])),
            last=Max("submitted_at"),
        )
    }
    standings = {
        s.expert_id: s for s in ControlStanding.objects.filter(panel=panel, expert_id__in=ids)
    }
    # Skips and broken-item flags of the panel's answers (work.flags), open and resolved.
    flag_counts = {
        row["expert_id"]: row
        for row in Flag.objects.filter(expert_id__in=ids, assignment__panel=panel)
        .values("expert_id")
        .annotate(
            skips=Count("id", filter=Q(kind=FlagKind.SKIP)),
            flags=Count("id", filter=Q(kind=FlagKind.BROKEN)),
        )
    }
    if agreement is None:
        agreement = panel_agreement(panel, ids)
    rows = []
    for m in memberships:
        c = counts.get(m.expert_id, {})
        if not m.qualified:
            status = "unqualified"
        elif m.is_paused:
            status = "paused"
        else:
            status = "active"
        rows.append(
            {
                "membership": m,
                "expert": m.expert,
                "open": c.get("open", 0),
                "done": c.get("done", 0),
                "last": c.get("last"),
                "standing": standings.get(m.expert_id),
                "skips": flag_counts.get(m.expert_id, {}).get("skips", 0),
                "flags": flag_counts.get(m.expert_id, {}).get("flags", 0),
                "agreement": agreement.get(m.expert_id, {}),
                "status": status,
            }
        )
    return rows


def viewer_is_blind(panel: Panel, user: Any) -> bool:
    """Whether the user holds open work on answers this panel scores (as an expert, in any
    panel). Then the console's score aggregates of the panel (distribution, confidence,
    agreement) are hidden from him too: on a young panel they are a handful of scores, his
    peers' scores of his own open answers among them. Lists hide just those answers."""

    if not hasattr(user, "expert"):
        return False
    return Triple.objects.filter(panel=panel, answer_id__in=blind_answer_ids(user)).exists()


def estimates_list(panel: Panel, filters: dict[str, str], viewer: Any = None) -> QuerySet[Any]:
    """Submitted work of the panel, filtered in the database; no text column is loaded.

    The viewer's own open answers are left out entirely (not only their scores: counts and
    filters by score would still tell them): a supervisor who is also an expert scores blind.
    Rubric estimates only: the list's columns (criterion, score, NA) are a rubric's, and a
    side-by-side label has none of them.
    """

    qs = Estimate.objects.filter(
        triple__panel=panel, triple__kind=TripleKind.POINTWISE, assignment__kind="work"
    )
    if viewer is not None and hasattr(viewer, "expert"):
        qs = qs.exclude(triple__answer_id__in=blind_answer_ids(viewer))
    if filters.get("status"):
        qs = qs.filter(status=filters["status"])
    if filters.get("group"):
        qs = qs.filter(triple__group=filters["group"])
    if filters.get("expert"):
        qs = qs.filter(expert__pseudonym=filters["expert"])
    if filters.get("criterion"):
        qs = qs.filter(triple__criterion__key=filters["criterion"])
    if filters.get("review") in ("returned", "accepted"):
        qs = qs.filter(review_status=filters["review"])
    elif filters.get("review") == "none":
        qs = qs.filter(review_status="")
    if filters.get("score") not in (None, ""):
        if filters["score"] == "na":
            qs = qs.filter(is_na=True)
        else:
            # An unknown score ("²", 32768...) filters everything out, as a score nobody gave.
            score, _na, malformed = parse_score(filters["score"])
            qs = qs.filter(score=score, is_na=False) if not malformed else qs.none()
    return (
        qs.select_related("expert", "triple__criterion")
        .only(
            "id",
            "status",
            "score",
            "is_na",
            "slot",
            "submitted_at",
            "time_spent_ms",
            "review_status",
            "assignment_id",
            "triple_id",
            "triple__answer_id",
            "triple__group",
            "triple__reopened_note",
            "triple__required_overlap",
            "triple__criterion__key",
            "expert__pseudonym",
        )
        .order_by("-id")
    )


def score_distribution(panel: Panel, limit: int = 24) -> list[dict[str, Any]]:
    """Counts of each score (and NA) per criterion, for small-multiple bar charts."""
    rows = fetch_all(
        f"""SELECT c.key, c.name_en, c.name_ru,
                  CASE WHEN e.is_na THEN 'NA' ELSE CAST(e.score AS TEXT) END, COUNT(*)
           FROM {_ESTIMATE} e
           JOIN {_TRIPLE} t ON t.id = e.triple_id
           JOIN {_CRITERION} c ON c.id = t.criterion_id
           WHERE t.panel_id = %s AND e.status = 'submitted'
             AND NOT EXISTS (SELECT 1 FROM {_RESERVED} r WHERE r.answer_id = t.answer_id)
           GROUP BY 1, 2, 3, 4 ORDER BY 1""",  # noqa: S608
        [panel.pk],
    )
    out: dict[str, dict[str, Any]] = {}
    for key, en, ru, value, n in rows:
        entry = out.setdefault(key, {"key": key, "name_en": en, "name_ru": ru, "counts": {}})
        entry["counts"][value] = n
    ranked = sorted(out.values(), key=lambda d: -sum(d["counts"].values()))
    return sorted(ranked[:limit], key=lambda d: d["key"])


def confidence_histogram(panel: Panel, bins: int = 10) -> list[int]:
    """How confident the aggregated verdicts are: counts per confidence bin in [0, 1]."""
    rows = fetch_all(
        # Confidences take few distinct values (shares of a handful of votes): bin in Python.
        f"""SELECT a.confidence, COUNT(*)
           FROM {_AGGREGATE} a JOIN {_TRIPLE} t ON t.id = a.triple_id
           WHERE t.panel_id = %s AND a.confidence IS NOT NULL
           GROUP BY 1""",  # noqa: S608
        [panel.pk],
    )
    counts = [0] * bins
    for confidence, n in rows:
        counts[max(0, min(bins - 1, int(float(confidence) * bins)))] += n
    return counts


def pair_agreement_rows(panel: Panel) -> list[dict[str, Any]]:
    """The panel's side-by-side agreement per criterion (quality.pairwise, complete pairs only):
    the majority-vote rate REPA reports, and the chance-corrected Fleiss' kappa and
    Krippendorff's alpha it lacked. Empty when the panel compares no pairs."""
    if not Triple.objects.filter(panel=panel, kind=TripleKind.PAIRWISE).exists():
        return []
    names = {c.key: c.name for c in ComparisonCriterion.objects.all()}
    return [
        {"key": key, "name": names.get(key, key), "agreement": value}
        for key, value in comparison_agreement(panel).items()
    ]
