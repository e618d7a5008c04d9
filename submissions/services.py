"""Submissions: reading a participant's file, the state machine, scoring and publishing.

A submission answers one version of the benchmark (leaderboards.versions): its file is checked
against that version's items, it is scored by that version's judge under its rules, and it is
ranked on that version's board only. Uploading to an older version stays possible.

The one home of the submission rules: the limits (per participant and day, size, the same
answers twice), the settings check (a submission whose inference settings differ from the
benchmark's fixed ones is flagged, not refused), the states and who moves them:

    uploaded ──(job: triples, judge run)──▶ scoring ──(the run ends)──▶ scored | failed
    scored ──(the participant)──▶ requested ──(an admin)──▶ published | rejected
    failed ──(an admin scores again)──▶ scoring

Answers are stored as a model of their own, reserved (work.ReservedAnswer, purpose
"submission"): no expert is ever assigned them unless an admin sends them to the panels, and
no board shows them before the submission is published (leaderboards.hooks).
"""

from __future__ import annotations

import hashlib
import itertools
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.translation import gettext as _

from jobs.models import JobKind
from jobs.services import enqueue
from judging.models import JudgeRun, RunStatus
from judging.selectors import scope_triples
from judging.services import JudgingError, run_create, run_resume
from leaderboards.models import BoardVersion, Leaderboard, LeaderboardSnapshot
from leaderboards.services import (
    criterion_names,
    judge_verdicts,
    settings_problem,
    snapshot_queue,
    source_rows,
)
from leaderboards.versions import public_rows, version_current
from lib import bounded_json
from material.import_common import Errors, RowError, TooManyErrors, cell, sha256_hex
from material.models import Answer, LanguageModel
from material.readers import open_table
from participants.models import Participant
from submissions.models import State, Submission, SubmissionEvent
from taxonomy.models import Criterion, Rubric, Task
from work.assignments import triples_build
from work.models import ReservedAnswer

# The submission file's columns (first name: ours; the others are accepted aliases).
COLUMNS: dict[str, tuple[str, ...]] = {
    "instruction_id": ("instruction_id", "id"),
    "answer": ("answer", "answer_text", "output"),
}
TYPES: dict[str, tuple[str, ...]] = {
    "instruction_id": ("string", "integer"),
    "answer": ("string",),
}
# The public inputs' columns (the answer column left empty for the participant to fill).
INPUT_FIELDS = (
    "instruction_id",
    "instruction",
    "task_type",
    "task_path",
    "complexity",
    "style",
    "answer",
)
MAX_ERRORS = 50
MAX_SETTINGS_CHARS = 10_000
MAX_LOGS_CHARS = 200_000
# The result's strongest and weakest criteria shown to the participant.
EXTREMES = 5


class SubmissionRefused(Exception):
    """Nothing was stored: the errors name the row and column, or the limit."""

    def __init__(self, errors: list[RowError], status: int = 422) -> None:
        super().__init__("; ".join(e.message for e in errors[:3]))
        self.errors = errors
        self.status = status


class StateError(Exception):
    """The action does not apply to the submission's state (409)."""


@dataclass
class Metadata:
    model_name: str
    model_version: str
    parameters: str
    gpus: str
    logs: str
    inference_settings: dict[str, Any] = field(default_factory=dict)


# --- the benchmark's inputs -----------------------------------------------------------------


def version_instruction_ids(version: BoardVersion) -> list[int]:
    """The instructions a submission to the version answers, in id order."""
    return list(version.items.order_by("instruction_id").values_list("instruction_id", flat=True))


def public_inputs(version: BoardVersion) -> list[dict[str, str]]:
    """The rows participants download, written from the version's frozen copies (the same
    bytes whatever happened to the material since): the instruction and its catalogue place,
    never the reference answer."""
    return public_rows(version)


# --- reading a file -------------------------------------------------------------------------


def _field(row: dict[str, Any], names: tuple[str, ...]) -> tuple[str | None, Any]:
    for name in names:
        if name in row:
            return name, row[name]
    return None, None


def read_answers(path: Path, version: BoardVersion, *, max_bytes: int) -> dict[int, str]:
    """{instruction id: answer} of a file answering every instruction of the version once.
    Raises SubmissionRefused with every problem found (up to MAX_ERRORS), by row and column."""
    errors = Errors(limit=MAX_ERRORS)
    wanted = set(version_instruction_ids(version))
    max_text = settings.IMPORT_MAX_TEXT_CHARS
    answers: dict[int, str] = {}
    first_row: dict[int, int] = {}
    try:
        with open_table(path, None, max_bytes, errors, aliases=COLUMNS, types=TYPES) as table:
            if table is None:
                rows: Iterator[tuple[int, dict[str, Any]]] = iter(())
            elif table.dynamic:
                # JSON lines name their fields per row: the first row stands for the file, so a
                # file whose answers are under another name gets one error, not one per row.
                rows = iter(table.rows)
                first = next(rows, None)
                if first is not None:
                    _check_columns(first[1].keys(), first[0], errors)
                    rows = itertools.chain([first], rows)
            else:
                _check_columns(table.columns, table.header_row, errors)
                rows = iter(table.rows)
            if table is not None and not errors:
                for number, row in rows:
                    _read_row(number, row, wanted, max_text, answers, first_row, errors)
                _check_complete(answers, wanted, errors)
    except TooManyErrors:
        pass
    if errors:
        raise SubmissionRefused(errors.items)
    return answers


def _check_columns(found: Iterable[str], row: int | None, errors: Errors) -> None:
    """Each column under one of its names; a missing one is named with the columns found."""
    present = [str(name) for name in found]
    for name, aliases in COLUMNS.items():
        if not set(aliases) & set(present):
            errors.add(
                row,
                name,
                "missing_column",
                _("The column %(name)s is missing; the file has: %(found)s.")
                % {"name": name, "found": ", ".join(present[:20]) or "—"},
            )


def _check_complete(answers: dict[int, str], wanted: set[int], errors: Errors) -> None:
    """The file read without an error answers every instruction of the board."""
    if not answers and not errors:
        errors.add(None, None, "empty_file", _("The file has no data rows."))
    missing = sorted(wanted - set(answers))
    if missing and not errors:
        shown = ", ".join(map(str, missing[:10]))
        errors.add(
            None,
            "instruction_id",
            "missing_answers",
            _("%(count)s instructions of the benchmark have no answer: %(ids)s%(more)s.")
            % {
                "count": len(missing),
                "ids": shown,
                "more": "…" if len(missing) > 10 else "",
            },
        )


def _read_row(
    number: int,
    row: dict[str, Any],
    wanted: set[int],
    max_text: int,
    answers: dict[int, str],
    first_row: dict[int, int],
    errors: Errors,
) -> None:
    id_column, raw_id = _field(row, COLUMNS["instruction_id"])
    answer_column, raw_answer = _field(row, COLUMNS["answer"])
    text = cell(raw_id).strip()
    if not text:
        errors.add(number, id_column or "instruction_id", "required", _("The value is missing."))
        return
    # isdecimal alone takes "²" and other digits int() refuses; 18 digits fit any id.
    if not (text.isascii() and text.isdecimal() and len(text) <= 18) or int(text) not in wanted:
        errors.add(
            number,
            id_column,
            "unknown_instruction",
            _("“%(id)s” is not an instruction of this benchmark.") % {"id": text[:50]},
        )
        return
    pk = int(text)
    if pk in first_row:
        errors.add(
            number,
            id_column,
            "duplicate",
            _("The instruction is answered twice (first in row %(row)s).") % {"row": first_row[pk]},
        )
        return
    answer = cell(raw_answer)
    if not answer.strip():
        errors.add(number, answer_column or "answer", "required", _("The answer is empty."))
        return
    if len(answer) > max_text:
        errors.add(
            number,
            answer_column,
            "too_long",
            _("The answer has %(n)s characters; at most %(max)s are allowed.")
            % {"n": len(answer), "max": max_text},
        )
        return
    if "\x00" in answer:
        errors.add(number, answer_column, "bad_text", _("The answer contains a NUL character."))
        return
    first_row[pk] = number
    answers[pk] = answer


def content_fingerprint(answers: dict[int, str]) -> str:
    """What "the same answers" means: each answer compared as `compared_text` gives it, so
    a trailing space, Windows line ends or another Unicode form make no new submission."""
    digest = hashlib.sha256()
    for pk in sorted(answers):
        digest.update(f"{pk}\x1f{compared_text(answers[pk])}\x1e".encode())
    return digest.hexdigest()


def compared_text(text: str) -> str:
    """An answer as the duplicate check compares it: Unicode NFC, line ends as "\\n",
    without the whitespace around it (the stored answer keeps its own bytes)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text).strip()


def settings_mismatch(fixed: dict[str, Any], given: dict[str, Any]) -> list[dict[str, Any]]:
    """The fixed settings the submission does not use as fixed (a missing one included)."""
    return [
        {"setting": key, "expected": expected, "given": given.get(key)}
        for key, expected in sorted(fixed.items())
        if given.get(key) != expected
    ]


def parse_settings(text: str) -> dict[str, Any]:
    """The inference settings as typed in the form: a JSON object. ValueError says why not."""
    text = (text or "").strip()
    if not text:
        return {}
    if len(text) > MAX_SETTINGS_CHARS:
        raise ValueError(_("At most %(n)s characters.") % {"n": MAX_SETTINGS_CHARS})
    # The bounded reader: 3,000 nested lists are refused before json.loads recurses (it was a
    # RecursionError, a 500), a number of thousands of digits, NaN and Infinity (which the
    # database refuses) are refused naming the limit. The characters are counted above; a
    # character is at most 4 bytes.
    value = bounded_json.loads(text, max_bytes=4 * MAX_SETTINGS_CHARS, field="inference_settings")
    problem = settings_problem(value)
    if problem:
        raise ValueError(problem)
    return value


# --- limits ---------------------------------------------------------------------------------


def uploads_today(participant: Participant, board: Leaderboard) -> int:
    since = timezone.now() - timedelta(days=1)
    return Submission.objects.filter(
        participant=participant, leaderboard=board, created_at__gte=since
    ).count()


def _check_limits(participant: Participant, board: Leaderboard, version: BoardVersion) -> None:
    if not board.accepts_submissions or version.judge_config_id is None:
        raise SubmissionRefused(
            [RowError(None, None, "closed", _("This benchmark does not take submissions."))],
            status=403,
        )
    if uploads_today(participant, board) >= board.submissions_per_day:
        raise SubmissionRefused(
            [
                RowError(
                    None,
                    None,
                    "daily_limit",
                    _("At most %(n)s submissions a day to this benchmark; try again later.")
                    % {"n": board.submissions_per_day},
                )
            ],
            status=429,
        )


def _check_duplicate(participant: Participant, version: BoardVersion, fingerprint: str) -> None:
    earlier = (
        Submission.objects.filter(
            participant=participant,
            leaderboard_id=version.leaderboard_id,
            version=version,
            content_sha256=fingerprint,
        )
        .order_by("pk")
        .first()
    )
    if earlier is not None:
        raise SubmissionRefused(
            [
                RowError(
                    None,
                    None,
                    "duplicate_submission",
                    _("The same answers were already submitted (submission %(id)s).")
                    % {"id": earlier.pk},
                )
            ],
            status=409,
        )


# --- the state machine ----------------------------------------------------------------------


def _move(submission: Submission, new: str, *, actor: Any = None, note: str = "") -> None:
    old = submission.state
    submission.state = new
    submission.save(update_fields=["state", "message", "updated_at", *_extra_fields])
    SubmissionEvent.objects.create(
        submission=submission, actor=actor, old=old, new=new, note=note[:1000]
    )


# Fields a transition may have changed besides the state (saved with it).
_extra_fields = ["judge_run", "judge_config", "result", "sent_to_panels_at"]


def _locked(submission: Submission) -> Submission:
    return Submission.objects.select_for_update().get(pk=submission.pk)


def submission_upload(
    *,
    participant: Participant,
    board: Leaderboard,
    path: Path,
    file_name: str,
    meta: Metadata,
    actor: Any,
    version: BoardVersion | None = None,
    queue_scoring: bool = True,
) -> Submission:
    """Read, check and store a submission to the version (the board's current one by default)
    whole, or refuse it whole (SubmissionRefused); its scoring is queued once stored (unless
    `queue_scoring` is off: the caller scores it, as the demo's seed does in-process)."""
    version = version or version_current(board)
    assert version.leaderboard_id == board.pk
    _check_limits(participant, board, version)
    if version.closed:
        raise SubmissionRefused(
            [
                RowError(
                    None,
                    "file",
                    "closed_version",
                    _("Version %(n)s is a closed test: give your model's endpoint, not a file.")
                    % {"n": version.number},
                )
            ],
            status=409,
        )
    answers = read_answers(path, version, max_bytes=settings.SUBMISSION_MAX_BYTES)
    fingerprint = content_fingerprint(answers)
    _check_duplicate(participant, version, fingerprint)
    with transaction.atomic():
        # Two tabs uploading at once: the second waits here, then meets the limits it may
        # have reached meanwhile.
        Participant.objects.select_for_update().get(pk=participant.pk)
        _check_limits(participant, board, version)
        _check_duplicate(participant, version, fingerprint)
        submission = Submission.objects.create(
            participant=participant,
            leaderboard=board,
            version=version,
            model_name=meta.model_name,
            model_version=meta.model_version,
            parameters=meta.parameters,
            inference_settings=meta.inference_settings,
            gpus=meta.gpus,
            logs=meta.logs,
            file_name=file_name[:255],
            file_bytes=path.stat().st_size,
            content_sha256=fingerprint,
            answers=len(answers),
            settings_mismatch=settings_mismatch(
                version.fixed_settings or {}, meta.inference_settings
            ),
            judge_config_id=version.judge_config_id,
        )
        # The model is the submission's own: "name version #id", unique across participants.
        model = LanguageModel.objects.create(
            name=meta.model_name,
            version=f"{meta.model_version} #{submission.pk}".strip()[:100],
            # Never "human" (the human baseline's mark): whose it is, as a participant.
            provider=f"participant: {participant}"[:200],
        )
        created = Answer.objects.bulk_create(
            [
                Answer(
                    instruction_id=pk,
                    model=model,
                    text=text,
                    text_hash=sha256_hex(text),
                    generation_meta={"submission": submission.pk},
                )
                for pk, text in sorted(answers.items())
            ],
            batch_size=1000,
        )
        ReservedAnswer.objects.bulk_create(
            [ReservedAnswer(answer=a, purpose=ReservedAnswer.Purpose.SUBMISSION) for a in created],
            batch_size=1000,
        )
        submission.model = model
        submission.save(update_fields=["model"])
        SubmissionEvent.objects.create(
            submission=submission, actor=actor, old="", new=State.UPLOADED, note=file_name[:200]
        )
        if queue_scoring:
            enqueue(JobKind.SUBMISSION, {"submission": submission.pk}, user=actor)
    return submission


def submission_score(submission_id: int, *, enqueue_run: bool = True) -> JudgeRun | None:
    """The scoring job: build the submission's triples and start the designated judge's run
    over them (its batches queued, unless `enqueue_run` is off: the caller runs them); the run,
    or None when none was started. Idempotent: a submission already past "uploaded" is left
    alone."""
    with transaction.atomic():
        submission = Submission.objects.select_for_update().get(pk=submission_id)
        if submission.state != State.UPLOADED:
            return None
        answer_ids = list(
            Answer.objects.filter(model_id=submission.model_id).values_list("pk", flat=True)
        )
        triples_build(answer_ids=answer_ids, reserved=True)
        config = submission.judge_config or _version_of(submission).judge_config
        if config is None:
            submission.message = _("The benchmark has no designated judge.")
            _move(submission, State.FAILED, note=submission.message)
            return None
        submission.judge_config = config
        if not scope_triples({"model": submission.model_id}).exists():
            submission.message = _("No criterion applies to these instructions.")
            _move(submission, State.FAILED, note=submission.message)
            return None
        try:
            run = run_create(
                config=config, scope={"model": submission.model_id}, enqueue=enqueue_run
            )
        except JudgingError as exc:
            submission.message = str(exc)
            _move(submission, State.FAILED, note=submission.message)
            return None
        submission.judge_run = run
        submission.message = ""
        _move(submission, State.SCORING)
    return run


def _version_of(submission: Submission) -> BoardVersion:
    """The submission's version; one stored without (before versions, or by hand) is its
    board's first version's, as the migration decided."""
    if submission.version is not None:
        return submission.version
    first = submission.leaderboard.versions.order_by("number").first()
    return first or version_current(submission.leaderboard)


def submission_finish(run_id: int) -> None:
    """The judge run scoring a submission ended (judging.hooks.run_finished): its result, or
    the failure. Idempotent (also asked by the page, should the hook have been missed)."""
    with transaction.atomic():
        submission = (
            Submission.objects.select_for_update(of=("self",))
            .filter(judge_run_id=run_id, state=State.SCORING)
            .select_related("leaderboard", "version", "judge_run")
            .first()
        )
        if submission is None or submission.judge_run is None:
            return
        run = submission.judge_run
        if run.status == RunStatus.DONE:
            # A closed test's generation report stays beside the score.
            generated = {k: v for k, v in (submission.result or {}).items() if k == "generation"}
            submission.result = {**result_of(submission), **generated}
            submission.message = ""
            _move(submission, State.SCORED)
        elif run.status in (RunStatus.FAILED, RunStatus.CANCELLED):
            submission.message = run.message or _("The judge run did not finish.")
            _move(submission, State.FAILED, note=submission.message)


def submission_refresh(submission: Submission) -> Submission:
    """A scoring submission whose run has ended is finished now (the page asks)."""
    if submission.state == State.SCORING and submission.judge_run_id:
        status = JudgeRun.objects.values_list("status", flat=True).get(pk=submission.judge_run_id)
        if status != RunStatus.RUNNING and status != RunStatus.PENDING:
            submission_finish(submission.judge_run_id)
            submission.refresh_from_db()
    return submission


def result_of(submission: Submission) -> dict[str, Any]:
    """The private result: the mean normalised judge score with its 95 % interval, per task
    type, the strongest and weakest criteria, the parse failures, and where the model would
    stand among the latest rows of the same judge on the version's board: over the version's
    items and criteria, under its gate rule."""
    version = _version_of(submission)
    config = submission.judge_config
    assert config is not None and submission.model_id is not None
    rubrics = {r.pk: r for r in Rubric.objects.all()}
    verdicts = judge_verdicts(version, config, rubrics, only_model=submission.model_id)
    rows = source_rows(verdicts, rubrics, rule=version.gate_rule)
    run = submission.judge_run
    out: dict[str, Any] = {
        "judge": str(config),
        "version": version.number,
        "judged": run.done if run else 0,
        "parse_failures": run.parse_failures if run else 0,
        "random": (rows.get("random") or {}).get("mean"),
    }
    if not rows["models"]:
        return {**out, "mean": None}
    row = rows["models"][0]
    groups = {str(t.pk): (t.name_en, t.name_ru) for t in Task.objects.filter(level=0)}
    criteria = {
        str(c.pk): (names["en"], names["ru"])
        for c in Criterion.objects.filter(
            pk__in=[int(k) for k in row["by_criterion"]]
        ).select_related("style")
        for names in [criterion_names(c)]
    }
    by_criterion = sorted(row["by_criterion"].items(), key=lambda kv: -kv[1])
    out.update(
        mean=row["mean"],
        low=row["low"],
        high=row["high"],
        answers=row["answers"],
        gated_answers=row["gated_answers"],
        by_group=[
            [*groups.get(k, (k, k)), v]
            for k, v in sorted(row["by_group"].items(), key=lambda kv: -kv[1])
        ],
        strongest=[[*criteria.get(k, (k, k)), v] for k, v in by_criterion[:EXTREMES]],
        weakest=[[*criteria.get(k, (k, k)), v] for k, v in by_criterion[::-1][:EXTREMES]],
        standing=_standing(version, config.pk, row["mean"]),
    )
    return out


def _standing(version: BoardVersion, config_id: int, mean: float) -> dict[str, int] | None:
    """Where the mean would rank among the version's published rows of the same judge."""
    snapshot = LeaderboardSnapshot.objects.filter(version=version).first()
    if snapshot is None:
        return None
    for source in snapshot.data.get("sources", []):
        if source.get("key") == f"judge:{config_id}":
            means = np.asarray([m["mean"] for m in source.get("models", [])], dtype=float)
            return {"rank": int((means > mean).sum()) + 1, "of": len(means) + 1}
    return None


def publication_request(submission: Submission, *, actor: Any) -> None:
    with transaction.atomic():
        locked = _locked(submission)
        if locked.state != State.SCORED:
            raise StateError(_("Only a scored submission can be published."))
        locked.message = ""
        _move(locked, State.REQUESTED, actor=actor)


def publication_decide(submission: Submission, *, approve: bool, reason: str, actor: Any) -> None:
    """An admin's decision; a rejection says why. Approving recomputes the board."""
    reason = reason.strip()
    if not approve and not reason:
        raise StateError(_("A rejection needs a reason."))
    with transaction.atomic():
        locked = _locked(submission)
        if locked.state != State.REQUESTED:
            raise StateError(_("Only a submission awaiting publication can be decided."))
        locked.message = "" if approve else reason[:1000]
        _move(locked, State.PUBLISHED if approve else State.REJECTED, actor=actor, note=reason)
        if approve:
            snapshot_queue(locked.leaderboard, actor, fresh=True, version=_version_of(locked))


def scoring_retry(submission: Submission, *, actor: Any) -> None:
    """An admin scores a failed submission again: its run resumed, or a new scoring job."""
    with transaction.atomic():
        locked = _locked(submission)
        if locked.state != State.FAILED:
            raise StateError(_("Only a submission whose scoring failed is scored again."))
        if locked.endpoint and not locked.answers:
            # Its generation failed and its key is deleted: only the participant can retry.
            raise StateError(
                _("Its endpoint gave no complete answers: the participant submits again.")
            )
        locked.message = ""
        run = locked.judge_run
        if run is not None and not run.cancelled:
            _move(locked, State.SCORING, actor=actor, note="resumed")
            run_resume(run=run)
        else:
            _move(locked, State.UPLOADED, actor=actor, note="rescored")
            enqueue(JobKind.SUBMISSION, {"submission": locked.pk}, user=actor)


def send_to_panels(submission: Submission, *, actor: Any) -> int:
    """The submission's answers become ordinary material: the reservation is lifted, so the
    next assignment build gives them to the panels. Returns how many answers were sent."""
    with transaction.atomic():
        locked = _locked(submission)
        if locked.state in (State.UPLOADED, State.FAILED) or locked.sent_to_panels_at:
            raise StateError(_("Only a scored submission not yet sent can be sent to the panels."))
        sent, _by_kind = ReservedAnswer.objects.filter(
            answer__model_id=locked.model_id, purpose=ReservedAnswer.Purpose.SUBMISSION
        ).delete()
        locked.sent_to_panels_at = timezone.now()
        locked.save(update_fields=["sent_to_panels_at", "updated_at"])
        SubmissionEvent.objects.create(
            submission=locked,
            actor=actor,
            old=locked.state,
            new=locked.state,
            note=f"sent to the panels ({sent} answers)",
        )
    return sent
