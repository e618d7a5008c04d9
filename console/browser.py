"""The data browser and the search-as-you-type pickers: reads of answers and triples.

Scope: an admin sees everything, a supervisor the answers and triples of the panels he
supervises (the view resolves `panels` through panels.access). Exam and control copies
(ReservedAnswer) are never material of the browser, and a viewer who is also an expert never
sees the verdicts of answers he holds open (work.selectors.blind_answer_ids).

Speed at POLLUX scale (500,000 estimates): pages are keyset-paginated on the primary key (`-id`,
`before=<last id>`, LIMIT n + 1, no COUNT), filters are indexed columns, and text search goes
through the full-text GIN indexes of material/migrations/0003 on PostgreSQL (every typed word,
as a word or a word's start): the text conditions are subqueries of their own table, one bitmap
index scan each, never an OR across a join that would read every text. SQLite (the demo) runs
`icontains` (the text contains what was typed) as a scan. Only a short excerpt of a text is
loaded for a row.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.db.models import Count, Exists, F, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL
from django.db.models.functions import Substr
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from dataset.models import (
    EXCLUDED_CRITICAL,
    EXCLUDED_FEW,
    EXCLUDED_NO_CONSENSUS,
    EXCLUDED_NO_SCORE,
)
from lib.numbers import decimal_number
from material import identity
from material.models import Answer, Instruction
from taxonomy.models import Complexity, Task
from work.forms import parse_id
from work.models import (
    Assignment,
    AssignmentKind,
    AssignmentStatus,
    Estimate,
    EstimateStatus,
    ReservedAnswer,
    ReviewStatus,
    Triple,
)
from work.selectors import blind_answer_ids

PAGE_SIZE = 50
PICK_LIMIT = 15
EXCERPT = 160
KINDS = ("answers", "triples", "instructions", "assignments")
EXCLUSION_REASONS = (EXCLUDED_CRITICAL, EXCLUDED_FEW, EXCLUDED_NO_SCORE, EXCLUDED_NO_CONSENSUS)
# Triple status, read from the aggregation (and the open estimates): what a filter can ask cheaply.
STATUSES = ("open", "in_dataset", "excluded", "no_verdict")
OPEN = (EstimateStatus.PENDING, EstimateStatus.DRAFT)


class FilterError(ValueError):
    """A filter value that names nothing (the view answers 400 with this message)."""


@dataclass(frozen=True)
class Filters:
    kind: str = "answers"
    q: str = ""
    task: int | None = None
    complexity: str = ""
    style: int | None = None
    panel: int | None = None
    status: str = ""
    conf_min: float | None = None
    conf_max: float | None = None
    excluded: str = ""
    model: int | None = None
    # The assignments view: the work's state (work.models.AssignmentStatus).
    work_status: str = ""
    before: int | None = None
    # Whether the viewer may see models: then, and only then, the fields that can name one
    # (material.identity) are shown and searched.
    models_visible: bool = False

    def triple_level(self) -> bool:
        """Whether a filter asks about triples (then an answer must have a matching triple)."""
        return bool(
            self.status or self.excluded or self.conf_min is not None or self.conf_max is not None
        )


# The form's own words for its fields, so an error names what the person sees.
FIELD_LABELS = {
    "kind": gettext_lazy("Show"),
    "task": gettext_lazy("Task"),
    "complexity": gettext_lazy("Complexity"),
    "style": gettext_lazy("Style"),
    "panel": gettext_lazy("Panel"),
    "status": gettext_lazy("Status"),
    "conf_min": gettext_lazy("Confidence from"),
    "conf_max": gettext_lazy("Confidence up to"),
    "excluded": gettext_lazy("Exclusion reason"),
    "model": gettext_lazy("Model"),
    "work_status": gettext_lazy("State of work"),
    "before": gettext_lazy("Page"),
}


def _field_label(name: str) -> str:
    return str(FIELD_LABELS.get(name, name))


def _int(params: Any, name: str) -> int | None:
    raw = str(params.get(name, "") or "").strip()
    if not raw:
        return None
    value = parse_id(raw)
    if value is None:
        raise FilterError(_("%(field)s: not an id.") % {"field": _field_label(name)})
    return value


def _confidence(params: Any, name: str) -> float | None:
    raw = str(params.get(name, "") or "").strip()
    if not raw:
        return None
    value = decimal_number(raw)
    if value is None:
        raise FilterError(_("%(field)s: not a number.") % {"field": _field_label(name)})
    if not 0 <= value <= 1:
        raise FilterError(_("%(field)s: between 0 and 1.") % {"field": _field_label(name)})
    return value


def _choice(params: Any, name: str, allowed: tuple[str, ...]) -> str:
    raw = str(params.get(name, "") or "").strip()
    if raw and raw not in allowed:
        raise FilterError(_("%(field)s: unknown value.") % {"field": _field_label(name)})
    return raw


def parse_filters(params: Any, *, models_visible: bool) -> Filters:
    """The browser's filters from a query string; FilterError names the first bad field.

    `model` is read only when the viewer may see models: for anyone else it is ignored, so a
    hand-written `?model=` cannot probe which answers a model wrote.
    """
    return Filters(
        kind=_choice(params, "kind", KINDS) or "answers",
        q=str(params.get("q", "") or "").strip()[:200],
        task=_int(params, "task"),
        complexity=_choice(params, "complexity", tuple(Complexity.values)),
        style=_int(params, "style"),
        panel=_int(params, "panel"),
        status=_choice(params, "status", STATUSES),
        conf_min=_confidence(params, "conf_min"),
        conf_max=_confidence(params, "conf_max"),
        excluded=_choice(params, "excluded", EXCLUSION_REASONS),
        model=_int(params, "model") if models_visible else None,
        work_status=_choice(params, "work_status", tuple(AssignmentStatus.values)),
        models_visible=models_visible,
        before=_int(params, "before"),
    )


# Words of a search: letters and digits (no tsquery operator can get through).
_WORD = re.compile(r"[^\W_]+")
_MAX_WORDS = 8


def _text_ids(model: type[Answer] | type[Instruction], q: str) -> Any:
    """Ids of the rows of `model` whose text matches the search.

    PostgreSQL: every word of the search, as a word or the start of one, any case, through the
    full-text GIN index of material/migrations/0003 (no text is read). Elsewhere (the SQLite
    demo): the text contains the search, `icontains`.
    """
    if connection.vendor != "postgresql":
        return model.objects.filter(text__icontains=q).values("pk")
    words = _WORD.findall(q.lower())[:_MAX_WORDS]
    if not words:
        return model.objects.none().values("pk")
    table = model._meta.db_table
    # The words go as a parameter; the table name is the model's own.
    return RawSQL(  # noqa: S611
        f"SELECT id FROM {table} "  # noqa: S608
        "WHERE to_tsvector('simple'::regconfig, text) @@ to_tsquery('simple'::regconfig, %s)",
        [" & ".join(f"{w}:*" for w in words)],
    )


def matching_answer_ids(q: str, *, models_visible: bool) -> QuerySet[Answer, Any]:
    """Ids of the answers a search finds: by id (a bare number), external id (the answer's, for
    a viewer who may see models only — material.identity — or the instruction's), or the
    answer's or the instruction's text (`_text_ids`, each through its own index)."""
    # Each condition on its own table (no join of the instructions): one index or hash each.
    cond = identity.answers_by_external_id(q, models_visible=models_visible) | Q(
        instruction_id__in=Instruction.objects.filter(external_id=q).values("pk")
    )
    pk = parse_id(q)
    if pk is not None:
        # A bare number is an id: "12" in a text ("№12", "12 лет") is not what was looked for.
        cond |= Q(pk=pk)
    else:
        cond |= Q(pk__in=_text_ids(Answer, q)) | Q(instruction_id__in=_text_ids(Instruction, q))
    return Answer.objects.filter(cond).values("pk")


def _not_reserved(answer_ref: str) -> Any:
    return ~Exists(ReservedAnswer.objects.filter(answer_id=OuterRef(answer_ref)))


def _triple_conditions(f: Filters) -> Q:
    """The triple-level filters (status, confidence, exclusion reason) as one Q on Triple."""
    cond = Q()
    if f.status == "open":
        cond &= Q(Exists(Estimate.objects.filter(triple_id=OuterRef("pk"), status__in=OPEN)))
    elif f.status == "in_dataset":
        cond &= Q(aggregate__isnull=False, aggregate__excluded_reason="")
    elif f.status == "excluded":
        cond &= Q(aggregate__isnull=False) & ~Q(aggregate__excluded_reason="")
    elif f.status == "no_verdict":
        cond &= Q(aggregate__isnull=True)
    if f.excluded:
        cond &= Q(aggregate__excluded_reason=f.excluded)
    if f.conf_min is not None:
        cond &= Q(aggregate__confidence__gte=f.conf_min)
    if f.conf_max is not None:
        cond &= Q(aggregate__confidence__lte=f.conf_max)
    return cond


def _answer_conditions(f: Filters, prefix: str) -> Q:
    """Filters on the answer and its instruction, `prefix` the path to the answer ("" or
    "answer__")."""
    cond = Q()
    if f.task is not None:
        cond &= Q(**{f"{prefix}instruction__task_id": f.task})
    if f.complexity:
        cond &= Q(**{f"{prefix}instruction__complexity": f.complexity})
    if f.style is not None:
        cond &= Q(**{f"{prefix}instruction__style_id": f.style})
    if f.model is not None:
        cond &= Q(**{f"{prefix}model_id": f.model})
    return cond


@dataclass
class Page:
    rows: list[Any]
    next_before: int | None
    filters: Filters
    extra: dict[str, Any] = field(default_factory=dict)


def _keyset(
    qs: QuerySet[Any], detail: Callable[[QuerySet[Any]], QuerySet[Any]], f: Filters, size: int
) -> tuple[list[Any], int | None]:
    """One page newest first: the ids by the filters alone (a lean query the planner walks down
    the primary key, stopping at size + 1), then `detail` (joins, excerpts) for those ids."""
    if f.before is not None:
        qs = qs.filter(pk__lt=f.before)
    ids = list(qs.order_by("-pk").values_list("pk", flat=True)[: size + 1])
    more = len(ids) > size
    ids = ids[:size]
    by_id = {row.pk: row for row in detail(qs.model.objects.filter(pk__in=ids))}
    return [by_id[i] for i in ids if i in by_id], (ids[-1] if more and ids else None)


def browse_triples(
    f: Filters, *, panel_ids: list[int] | None, viewer: Any, size: int = PAGE_SIZE
) -> Page:
    """One page of triples, newest first. `panel_ids` None: every panel (an admin)."""
    qs = Triple.objects.filter(_not_reserved("answer_id"))
    if panel_ids is not None:
        qs = qs.filter(panel_id__in=panel_ids)
    if hasattr(viewer, "expert"):
        qs = qs.exclude(answer_id__in=blind_answer_ids(viewer))
    qs = qs.filter(_triple_conditions(f) & _answer_conditions(f, "answer__"))
    if f.q:
        found = Q(answer_id__in=matching_answer_ids(f.q, models_visible=f.models_visible))
        if (pk := parse_id(f.q)) is not None:
            found |= Q(pk=pk)  # a number may be the triple's own id too
        qs = qs.filter(found)
    submitted = (
        Estimate.objects.filter(
            triple_id=OuterRef("pk"),
            status__in=[EstimateStatus.SUBMITTED, EstimateStatus.SKIPPED],
        )
        .values("triple_id")
        .annotate(n=Count("id"))
        .values("n")
    )

    def detail(rows: QuerySet[Any]) -> QuerySet[Any]:
        return (
            rows.select_related(
                "panel", "criterion", "comparison_criterion", "aggregate", "answer__model"
            )
            .only(
                "id",
                "kind",
                "required_overlap",
                "panel__number",
                "panel__name_en",
                "panel__name_ru",
                "criterion__key",
                "comparison_criterion__key",
                "aggregate__confidence",
                "aggregate__excluded_reason",
                "aggregate__mean",
                "aggregate__label",
                "answer__id",
                "answer__external_id",
                "answer__model__name",
                "answer__model__version",
            )
            .annotate(n_submitted=Subquery(submitted), excerpt=Substr("answer__text", 1, EXCERPT))
        )

    rows, next_before = _keyset(qs, detail, f, size)
    for row in rows:
        row.shown_external_id = identity.answer_external_id(
            row.answer.external_id, models_visible=f.models_visible
        )
    return Page(rows=rows, next_before=next_before, filters=f)


def browse_answers(
    f: Filters, *, panel_ids: list[int] | None, viewer: Any, size: int = PAGE_SIZE
) -> Page:
    """One page of answers, newest first. `panel_ids` None: every panel (an admin)."""
    qs = _answers(f, panel_ids=panel_ids, viewer=viewer)

    def detail(rows: QuerySet[Any]) -> QuerySet[Any]:
        return (
            rows.select_related("instruction__task", "instruction__style", "model")
            .only(
                "id",
                "external_id",
                "instruction__id",
                "instruction__external_id",
                "instruction__complexity",
                "instruction__task__id",
                "instruction__task__name_en",
                "instruction__task__name_ru",
                "instruction__style__name_en",
                "instruction__style__name_ru",
                "model__name",
                "model__version",
            )
            .annotate(
                excerpt=Substr("text", 1, EXCERPT),
                instruction_excerpt=Substr("instruction__text", 1, EXCERPT),
            )
        )

    rows, next_before = _keyset(qs, detail, f, size)
    for row in rows:
        row.shown_external_id = identity.answer_external_id(
            row.external_id, models_visible=f.models_visible
        )
    _attach_review_panels(rows, panel_ids=panel_ids)
    return Page(rows=rows, next_before=next_before, filters=f)


def _attach_review_panels(rows: list[Any], *, panel_ids: list[int] | None) -> None:
    """Set `review_panels` on each answer row: the viewer's panels (`panel_ids`, None: all)
    that score it, as (panel id, number) in panel order, for the links to its review page.

    One query for the whole page (the page's answer ids), never one per row. A panel scores an
    answer when the answer has a triple of it: the builder routes triples by the same table the
    review page's rule (`quality.manage_panel_answer`) reads, and reserved copies are not rows.
    """
    by_answer: dict[int, list[tuple[int, int]]] = {row.pk: [] for row in rows}
    if not by_answer:
        return
    triples = Triple.objects.filter(answer_id__in=list(by_answer))
    if panel_ids is not None:
        triples = triples.filter(panel_id__in=panel_ids)
    pairs = (
        triples.values_list("answer_id", "panel_id", "panel__number")
        .distinct()
        .order_by("answer_id", "panel__number", "panel_id")
    )
    for answer_id, panel_id, number in pairs:
        by_answer[answer_id].append((panel_id, number))
    for row in rows:
        row.review_panels = by_answer[row.pk]


def browse_instructions(
    f: Filters, *, panel_ids: list[int] | None, viewer: Any, size: int = PAGE_SIZE
) -> Page:
    """One page of instructions, newest first: those with an answer the answer view would show
    under the same filters (a search finds an instruction by its own text or external id, or by
    an answer's)."""
    qs = Instruction.objects.filter(
        pk__in=_answers(f, panel_ids=panel_ids, viewer=viewer).values("instruction_id")
    )
    n_answers = (
        Answer.objects.filter(instruction_id=OuterRef("pk"))
        .values("instruction_id")
        .annotate(n=Count("id"))
        .values("n")
    )

    def detail(rows: QuerySet[Any]) -> QuerySet[Any]:
        return (
            rows.select_related("task", "style")
            .only(
                "id",
                "external_id",
                "complexity",
                "task__id",
                "task__name_en",
                "task__name_ru",
                "style__name_en",
                "style__name_ru",
            )
            .annotate(excerpt=Substr("text", 1, EXCERPT), n_answers=Subquery(n_answers))
        )

    rows, next_before = _keyset(qs, detail, f, size)
    return Page(rows=rows, next_before=next_before, filters=f)


def browse_assignments(
    f: Filters, *, panel_ids: list[int] | None, viewer: Any, size: int = PAGE_SIZE
) -> Page:
    """One page of work assignments (the rows the bulk actions act on, console.bulk), newest
    first: each with its expert, state, how many of its scores are submitted and whether any
    was returned or waits in the review queue. Exam and control copies are not work."""
    qs = Assignment.objects.filter(kind=AssignmentKind.WORK).filter(_not_reserved("answer_id"))
    if panel_ids is not None:
        qs = qs.filter(panel_id__in=panel_ids)
    if hasattr(viewer, "expert"):
        # Who else scores the answers he holds open is none of a blind expert's business.
        qs = qs.exclude(answer_id__in=blind_answer_ids(viewer))
    if f.work_status:
        qs = qs.filter(status=f.work_status)
    if f.triple_level():
        triples = Triple.objects.filter(
            answer_id=OuterRef("answer_id"), panel_id=OuterRef("panel_id")
        )
        qs = qs.filter(Exists(triples.filter(_triple_conditions(f))))
    qs = qs.filter(_answer_conditions(f, "answer__"))
    if f.q:
        found = Q(answer_id__in=matching_answer_ids(f.q, models_visible=f.models_visible))
        if (pk := parse_id(f.q)) is not None:
            found |= Q(pk=pk)  # a number may be the assignment's own id too
        qs = qs.filter(found)

    def count(*q: Q, **cond: Any) -> Any:
        return Subquery(
            Estimate.objects.filter(*q, assignment_id=OuterRef("pk"), **cond)
            .values("assignment_id")
            .annotate(n=Count("id"))
            .values("n")
        )

    def detail(rows: QuerySet[Any]) -> QuerySet[Any]:
        return (
            rows.select_related("panel", "expert", "answer__instruction__task")
            .only(
                "id",
                "status",
                "locked",
                "submitted_at",
                "answer_id",
                "panel__number",
                "panel__name_en",
                "panel__name_ru",
                "expert__pseudonym",
                "answer__instruction__task__name_en",
                "answer__instruction__task__name_ru",
            )
            .annotate(
                excerpt=Substr("answer__text", 1, EXCERPT),
                n_estimates=count(),
                n_submitted=count(status=EstimateStatus.SUBMITTED),
                n_returned=count(review_status=ReviewStatus.RETURNED),
                # Waiting in the review queue: sent and not reviewed since (ReviewRequest).
                n_sent=count(
                    Q(review_request__isnull=False)
                    & (
                        Q(reviewed_at__isnull=True)
                        | Q(reviewed_at__lt=F("review_request__requested_at"))
                    )
                ),
            )
        )

    rows, next_before = _keyset(qs, detail, f, size)
    return Page(rows=rows, next_before=next_before, filters=f)


def _answers(f: Filters, *, panel_ids: list[int] | None, viewer: Any) -> QuerySet[Answer]:
    """The answers in scope that pass the filters (unordered, no columns chosen)."""
    qs = Answer.objects.filter(_not_reserved("pk"))
    needs_triple = panel_ids is not None or f.triple_level()
    if needs_triple:
        triples = Triple.objects.filter(answer_id=OuterRef("pk")).filter(_triple_conditions(f))
        if panel_ids is not None:
            triples = triples.filter(panel_id__in=panel_ids)
        qs = qs.filter(Exists(triples))
    if hasattr(viewer, "expert") and f.triple_level():
        # Filtering by verdicts would tell a blind viewer about his own open answers.
        qs = qs.exclude(pk__in=blind_answer_ids(viewer))
    qs = qs.filter(_answer_conditions(f, ""))
    if f.q:
        qs = qs.filter(pk__in=matching_answer_ids(f.q, models_visible=f.models_visible))
    return qs


# --- pickers: a few matches of one panel for a form field ----------------------------------


@dataclass(frozen=True)
class Option:
    value: str
    label: str


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def panel_answers(panel_id: int) -> QuerySet[Answer]:
    """Answers the panel scores as work (routed to it, not an exam or control copy)."""
    return Answer.objects.filter(
        Exists(Triple.objects.filter(answer_id=OuterRef("pk"), panel_id=panel_id)),
        _not_reserved("pk"),
    )


def pick_answers(
    panel_id: int, q: str, *, models_visible: bool, limit: int = PICK_LIMIT
) -> list[Option]:
    q = q.strip()[:200]
    if not q:
        return []
    rows = (
        panel_answers(panel_id)
        .filter(pk__in=matching_answer_ids(q, models_visible=models_visible))
        .annotate(excerpt=Substr("text", 1, EXCERPT))
        .only("id", "external_id")
        .order_by("-pk")[:limit]
    )
    out = []
    for a in rows:
        ext = identity.answer_external_id(a.external_id, models_visible=models_visible)
        out.append(Option(str(a.pk), f"#{a.pk} · {ext or '—'} · {_short(a.excerpt)}"))
    return out


def pick_triples(
    panel_id: int, q: str, *, models_visible: bool, limit: int = PICK_LIMIT
) -> list[Option]:
    q = q.strip()[:200]
    if not q:
        return []
    cond = Q(answer_id__in=matching_answer_ids(q, models_visible=models_visible))
    pk = parse_id(q)
    if pk is not None:
        cond |= Q(pk=pk)
    rows = (
        Triple.objects.filter(cond, _not_reserved("answer_id"), panel_id=panel_id)
        .select_related("criterion", "comparison_criterion", "answer")
        .only("id", "criterion__key", "comparison_criterion__key", "answer__external_id")
        .annotate(excerpt=Substr("answer__text", 1, EXCERPT))
        .order_by("-pk")[:limit]
    )
    out = []
    for t in rows:
        criterion = t.criterion or t.comparison_criterion
        key = criterion.key if criterion is not None else ""
        ext = identity.answer_label(
            t.answer_id, t.answer.external_id, models_visible=models_visible
        )
        out.append(Option(str(t.pk), f"#{t.pk} · {key} · {ext} · {_short(t.excerpt)}"))
    return out


def pick_tasks(q: str, limit: int = PICK_LIMIT) -> list[Option]:
    """Leaf tasks by id or a piece of their name (English path or Russian name)."""
    q = q.strip()[:200]
    if not q:
        return []
    cond = Q(path__icontains=q) | Q(name_ru__icontains=q)
    pk = parse_id(q)
    if pk is not None:
        cond |= Q(pk=pk)
    rows = (
        Task.objects.filter(cond, is_leaf=True)
        .select_related("group", "parent__parent")
        .order_by("path")[:limit]
    )
    return [Option(str(t.pk), f"#{t.pk} · {t.display_path()}") for t in rows]
