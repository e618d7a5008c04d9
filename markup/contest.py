"""Automatic checking of algorithmic markups (the ПРО//ЧТЕНИЕ Technical regulations, sections
6–7 and Appendix 2): a participant's system opens a session (a run) over a sample of texts, gets
texts — on request (pull) or on a schedule (paced) — returns their markups, and the platform
records the response time, keeps the last accepted markup of each text and scores it against the
hidden expert markups by СТАР.

Rules, and the choices where the regulations are silent (docs/spans.md):
- Deadline: a markup received more than `deadline_s` after the text's release annuls the text
  for the run (7.6); in paced mode the release is the scheduled time, not the request (the
  regulations count from the text's public opening). A released text never answered annuls at
  its deadline too; texts never released count as annulled once the run is closed (pull) or
  their scheduled time has passed (paced).
- Void: more than `annul_limit` (5 %) of the sample annulled voids the run (7.7); a void run is
  not ranked.
- At most `max_submissions` (10) markups per text, the last accepted one counts. Every markup
  received counts towards the cap, a refused one included: a system cannot probe the validator
  without limit.
- A markup of a text not released to the run is ignored (nothing stored, nothing counted).
- Expert markups are never returned: the report gives the scores only.
- СТАР is the mean over the run's answered, not annulled texts that have at least one submitted
  expert markup of H·mean_E M(A, E) + (1 − H)·max_E M(A, E) (protocol.spans.star).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from markup.models import (
    Markup,
    MarkupRun,
    MarkupRunItem,
    MarkupSample,
    MarkupSource,
    MarkupStatus,
    MarkupText,
    SampleMode,
)
from markup.services import markup_document
from participants.models import Participant
from protocol.markup_classifier import load_classifier
from protocol.markup_format import MarkupFormatError
from protocol.markup_json import read_selections, to_json, unstorable
from protocol.markup_validation import validate
from protocol.spans import Fragment, text_accuracy

# The system's name, with " · run <id>", is the author label of its markups (120 characters).
MAX_SYSTEM_CHARS = 100
# Paced: a session must open no later than this after the schedule's start (Appendix 2).
PACED_OPENING = timedelta(minutes=2)


class RunRefused(Exception):
    """A request the session rules refuse: the HTTP status, the field or rule, and details."""

    def __init__(self, status: int, field: str, message: str, **extra: Any) -> None:
        super().__init__(f"{field}: {message}")
        self.status = status
        self.field = field
        self.message = message
        self.extra = extra


def run_open(
    participant: Participant, sample: MarkupSample, system: Any, now: datetime | None = None
) -> MarkupRun:
    """Open the participant's one run over the sample."""
    now = now or timezone.now()
    if not isinstance(system, str) or not system.strip():
        raise RunRefused(400, "system", "the system's name is required")
    if len(system) > MAX_SYSTEM_CHARS or unstorable(system):
        raise RunRefused(400, "system", f"at most {MAX_SYSTEM_CHARS} characters of text")
    if not sample.is_open:
        raise RunRefused(409, "sample", "this sample accepts no new runs")
    if (
        sample.mode == SampleMode.PACED
        and sample.starts_at is not None
        and now > sample.starts_at + PACED_OPENING
    ):
        raise RunRefused(
            409, "sample", "a paced session opens no later than 2 minutes after the start"
        )
    try:
        with transaction.atomic():
            return MarkupRun.objects.create(
                sample=sample, participant=participant, system=system.strip()
            )
    except IntegrityError as error:
        earlier = MarkupRun.objects.filter(sample=sample, participant=participant).first()
        raise RunRefused(
            409,
            "sample",
            "you have a run on this sample (one run per participant and sample)",
            run=earlier.pk if earlier else None,
        ) from error


def _start(run: MarkupRun) -> datetime:
    return run.sample.starts_at or run.opened_at


def _release_due(run: MarkupRun, now: datetime) -> None:
    """Paced mode: materialise every text whose scheduled time has come."""
    sample = run.sample
    start = _start(run)
    if now < start:
        return
    due = int((now - start).total_seconds() // max(sample.interval_s, 1))
    have = set(run.items.values_list("position", flat=True))
    new = []
    for entry in sample.entries.filter(position__lte=due).order_by("position"):
        if entry.position in have:
            continue
        released = start + timedelta(seconds=entry.position * sample.interval_s)
        new.append(
            MarkupRunItem(
                run=run,
                text_id=entry.text_id,
                position=entry.position,
                released_at=released,
                deadline_at=released + timedelta(seconds=sample.deadline_s),
            )
        )
    MarkupRunItem.objects.bulk_create(new, ignore_conflicts=True)


@dataclass(frozen=True)
class NextText:
    item: MarkupRunItem | None
    done: bool = False
    next_at: datetime | None = None  # paced: when the next text opens


def _lock(run: MarkupRun) -> MarkupRun:
    locked = MarkupRun.objects.select_for_update().select_related("sample").get(pk=run.pk)
    if locked.closed_at is not None:
        raise RunRefused(409, "run", "this run is closed")
    return locked


@transaction.atomic
def run_next(run: MarkupRun, now: datetime | None = None) -> NextText:
    """The next text for the system: pull — the first not released yet (released now); paced —
    the text open now, if the system has not answered it yet."""
    now = now or timezone.now()
    run = _lock(run)
    sample = run.sample
    if sample.mode == SampleMode.PULL:
        released = set(run.items.values_list("position", flat=True))
        entry = sample.entries.exclude(position__in=released).order_by("position").first()
        if entry is None:
            return NextText(None, done=True)
        item = MarkupRunItem.objects.create(
            run=run,
            text_id=entry.text_id,
            position=entry.position,
            released_at=now,
            deadline_at=now + timedelta(seconds=sample.deadline_s),
        )
        return NextText(item)
    _release_due(run, now)
    start = _start(run)
    total = sample.entries.count()
    current = run.items.select_related("text").order_by("-position").first()
    if current is not None and current.answered_at is None and current.deadline_at >= now:
        return NextText(current)
    upcoming = 0 if current is None else current.position + 1
    if upcoming >= total:
        return NextText(None, done=True)
    return NextText(None, next_at=start + timedelta(seconds=upcoming * sample.interval_s))


@dataclass(frozen=True)
class Accepted:
    item: MarkupRunItem
    markup: Markup


def _document_of(text: MarkupText, payload: Any) -> Any:
    if not isinstance(payload, Mapping):
        raise RunRefused(400, "(body)", "a JSON object expected")
    if "text" in payload and payload["text"] is not None and payload["text"] != text.text:
        # Rule 8 of the inline format's errors is a warning; here the text is the key of every
        # offset, so a changed text cannot be scored.
        raise RunRefused(422, "text", "differs from the released text")
    try:
        return read_selections(payload.get("selections"), text=text.text, subject=text.subject)
    except MarkupFormatError as error:
        raise RunRefused(400, error.field, error.message) from error


def run_submit(run: MarkupRun, text_id: Any, payload: Any, now: datetime | None = None) -> Accepted:
    """Receive a system's markup of a released text (see the module's rules)."""
    now = now or timezone.now()
    if isinstance(text_id, bool) or not isinstance(text_id, int):
        raise RunRefused(400, "text_id", "an integer expected")
    with transaction.atomic():
        locked = _lock(run)
        if locked.sample.mode == SampleMode.PACED:
            _release_due(locked, now)
        item = (
            MarkupRunItem.objects.select_for_update()
            .select_related("text")
            .filter(run=locked, text_id=text_id)
            .first()
        )
        if item is None:
            raise RunRefused(409, "text_id", "this text was not released to the run: ignored")
        if item.submissions >= locked.sample.max_submissions:
            raise RunRefused(
                429, "text_id", f"at most {locked.sample.max_submissions} markups per text"
            )
        # Counted before anything else is checked, and committed with this block: a refused
        # markup counts towards the cap too.
        number = item.submissions + 1
        MarkupRunItem.objects.filter(pk=item.pk).update(submissions=number)
        late = item.annulled or now > item.deadline_at
        # Late: the text is annulled unless a markup came in time (then that one stands).
        annul = late and not item.annulled and item.answered_at is None
        if annul:
            MarkupRunItem.objects.filter(pk=item.pk).update(annulled=True)
    if late:
        if item.annulled or annul:
            raise RunRefused(
                409, "text_id", "after the deadline: the text is annulled", annulled=True
            )
        raise RunRefused(409, "text_id", "after the deadline: the markup sent in time stands")
    text = item.text
    document = _document_of(text, payload)
    issues = validate(document, load_classifier(text.classifier_name, text.classifier_version))
    if issues:
        first = issues[0]
        where = "(document)" if first.fragment is None else f"selections[{first.fragment}]"
        raise RunRefused(
            422,
            where,
            f"{first.kind}: {first.message}",
            issues=[{"kind": i.kind, "message": i.message, "fragment": i.fragment} for i in issues],
        )
    with transaction.atomic():
        item = MarkupRunItem.objects.select_for_update().get(pk=item.pk)
        if number < item.accepted_submission:
            # A later submission was stored while this one was being validated: it counts.
            assert item.markup is not None  # a stored submission has its markup
            return Accepted(item, item.markup)
        selections = to_json(document)["selections"]
        markup = item.markup
        if markup is None:
            markup = Markup.objects.create(
                text=text,
                source=MarkupSource.ALGORITHM,
                author=f"{run.system} · run {run.pk}",
                selections=selections,
                status=MarkupStatus.SUBMITTED,
            )
        else:
            markup.selections = selections
            markup.save(update_fields=["selections", "updated_at"])
        item.markup = markup
        item.accepted_submission = number
        item.answered_at = now
        item.response_ms = max(0, int((now - item.released_at).total_seconds() * 1000))
        item.save(update_fields=["markup", "accepted_submission", "answered_at", "response_ms"])
    return Accepted(item, markup)


@transaction.atomic
def run_close(run: MarkupRun, now: datetime | None = None) -> MarkupRun:
    run = _lock(run)
    run.closed_at = now or timezone.now()
    run.save(update_fields=["closed_at"])
    return run


@dataclass(frozen=True)
class ItemReport:
    text_id: int
    position: int
    released_at: datetime
    deadline_at: datetime
    answered_at: datetime | None
    response_ms: int | None
    submissions: int
    annulled: bool
    star_term: float | None  # the text's share of СТАР, None when not scored


@dataclass(frozen=True)
class RunReport:
    run: MarkupRun
    texts: int
    released: int
    answered: int
    annulled: int
    annulled_share: float
    void: bool
    star: float | None
    scored: int
    items: list[ItemReport] = field(default_factory=list)

    @property
    def closed(self) -> bool:
        return self.run.closed_at is not None


def _expert_fragments(text_ids: list[int]) -> dict[int, list[list[Fragment]]]:
    out: dict[int, list[list[Fragment]]] = {}
    experts = Markup.objects.filter(
        text_id__in=text_ids, source=MarkupSource.EXPERT, status=MarkupStatus.SUBMITTED
    ).select_related("text")
    for m in experts:
        out.setdefault(m.text_id, []).append(list(markup_document(m).fragments))
    return out


def _closed_terms(run: MarkupRun, items: list[MarkupRunItem]) -> dict[int, float]:
    """Each scored text's share of СТАР for a closed run: kept on the run and reused while
    nothing it depends on changed (its markups are final once closed; the expert markups of its
    texts and H are in the version), so a leaderboard does not rerun the matching per request."""
    answered = {i.text_id: i for i in items if i.markup is not None}
    experts = Markup.objects.filter(
        text_id__in=list(answered), source=MarkupSource.EXPERT, status=MarkupStatus.SUBMITTED
    ).aggregate(n=Count("pk"), last=Max("updated_at"))
    assert run.closed_at is not None
    version = "|".join(
        str(part)
        for part in (
            run.closed_at.isoformat(),
            run.sample.hardness,
            sorted(answered),
            experts["n"],
            experts["last"].isoformat() if experts["last"] else "",
        )
    )
    kept = run.scores or {}
    if kept.get("version") == version:
        return {int(k): float(v) for k, v in kept["terms"].items()}
    fragments = _expert_fragments(list(answered))
    terms = {}
    for text_id, item in answered.items():
        if text_id not in fragments:
            continue
        assert item.markup is not None
        accuracy = text_accuracy(
            list(markup_document(item.markup).fragments), fragments[text_id], item.text.text
        )
        terms[text_id] = accuracy.star_term(run.sample.hardness)
    MarkupRun.objects.filter(pk=run.pk).update(
        scores={"version": version, "terms": {str(k): v for k, v in terms.items()}}
    )
    return terms


def run_report(run: MarkupRun, now: datetime | None = None) -> RunReport:
    """What the participant and the staff see of a run: counts, annulments, void, СТАР."""
    now = now or timezone.now()
    run = MarkupRun.objects.select_related("sample", "participant").get(pk=run.pk)  # fresh state
    sample = run.sample
    if sample.mode == SampleMode.PACED and run.closed_at is None:
        with transaction.atomic():
            _release_due(run, now)
    total = sample.entries.count()
    items = list(run.items.select_related("text", "markup").order_by("position"))
    lost = {i.pk for i in items if i.annulled or (i.answered_at is None and now > i.deadline_at)}
    # Scores appear once the run is closed: an open run's scores would tell the system how close
    # it is to the hidden references while it can still resubmit.
    by_text = _closed_terms(run, [i for i in items if i.pk not in lost]) if run.closed_at else {}
    reports = []
    terms = []
    annulled = len(lost)
    for item in items:
        term = by_text.get(item.text_id) if item.pk not in lost else None
        if term is not None:
            terms.append(term)
        reports.append(
            ItemReport(
                item.text_id,
                item.position,
                item.released_at,
                item.deadline_at,
                item.answered_at,
                item.response_ms,
                item.submissions,
                item.pk in lost,
                term,
            )
        )
    unreleased = total - len(items)
    if run.closed_at is not None:
        annulled += unreleased
    share = annulled / total if total else 0.0
    star = sum(terms) / len(terms) if terms else None
    return RunReport(
        run=run,
        texts=total,
        released=len(items),
        answered=sum(1 for i in items if i.answered_at is not None),
        annulled=annulled,
        annulled_share=share,
        void=share > sample.annul_limit,
        star=star,
        scored=len(terms),
        items=reports,
    )


@dataclass(frozen=True)
class BoardRow:
    rank: int | None  # None for a void run
    report: RunReport


def leaderboard(sample: MarkupSample, now: datetime | None = None) -> list[BoardRow]:
    """The sample's closed runs by СТАР, best first (runs not yet scored after them); void runs
    and open ones follow, unranked (regulations 7.11: annulled solutions take no part in the
    final leaderboard; an open run's score is partial and hidden)."""
    reports = [run_report(run, now) for run in sample.runs.select_related("sample")]
    ranked = sorted(
        (r for r in reports if r.closed and not r.void),
        key=lambda r: (r.star is None, -(r.star or 0.0), r.run.pk),
    )
    rows = [BoardRow(rank, r) for rank, r in enumerate(ranked, start=1)]
    rows += [BoardRow(None, r) for r in reports if r.closed and r.void]
    rows += [BoardRow(None, r) for r in reports if not r.closed]
    return rows
