"""A closed test's submission: the participant gives his model's endpoint, not answers.

The platform answers the version's inputs itself, with the version's fixed inference settings,
through a generation run (generation.services: batches, progress, retries, cancel, resume,
finish reasons) over the version's frozen texts (generation.hooks.frozen_texts), then scores the
answers as it scores a file. The participant never sees the inputs or the outputs: his page
shows progress, counts and the private result.

The endpoint is untrusted: its address must pass the guard (judge_worker.backends.guard: no
private, loopback or link-local address unless SUBMISSION_ENDPOINT_ALLOW_PRIVATE; checked again
at every request, redirects never followed); its key is stored encrypted (runs.secrets), read
by the worker only and deleted when the run ends; the run goes one batch at a time, one endpoint
submission of a participant at a time, under a request budget and a cost cap (generation
.backends.LimitedEndpoint). A truncated answer (cut at the version's max_new_tokens) is scored
as the model's answer and counted in the result; an item that got no answer fails the
submission, saying how many and why (never echoing the key): the participant submits again.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils.translation import gettext as _

from generation.models import Generation, GenerationRun
from generation.services import MAX_NEW_TOKENS, GenerationError, config_save
from generation.services import run_cancel as generation_cancel
from generation.services import run_create as generation_run_create
from jobs.models import JobKind
from jobs.services import enqueue
from judge_worker.backends.guard import AddressRefused, check_url
from judge_worker.backends.openai_compat import KEY_CHARS
from leaderboards.models import BoardVersion, Leaderboard
from material.import_common import RowError
from material.models import Answer
from participants.models import Participant
from runs.models import RunStatus
from runs.secrets import key_delete, key_store
from submissions.models import State, Submission, SubmissionEvent
from submissions.services import (
    Metadata,
    StateError,
    SubmissionRefused,
    _check_limits,
    _locked,
    _move,
    content_fingerprint,
    version_instruction_ids,
)

MAX_KEY_CHARS = 4096
# The version's fixed settings a generation takes, with their types.
SETTING_TYPES: dict[str, tuple[type, ...]] = {
    "temperature": (int, float),
    "top_p": (int, float),
    "top_k": (int,),
    "max_new_tokens": (int,),
    "seed": (int,),
    "system_prompt": (str,),
}
# Errors of the failed items the participant reads (the most frequent first).
SHOWN_ERRORS = 3


@dataclass(frozen=True)
class Endpoint:
    url: str
    model: str
    api_key: str = ""

    def __repr__(self) -> str:  # never the key
        return f"Endpoint({self.url!r}, {self.model!r})"


def _refused(column: str, code: str, message: str, status: int = 422) -> SubmissionRefused:
    return SubmissionRefused([RowError(None, column, code, message)], status=status)


def endpoint_check(endpoint: Endpoint) -> None:
    """Refuse (SubmissionRefused, naming the field) an endpoint the platform must not call."""
    if not endpoint.url or len(endpoint.url) > 500:
        raise _refused(
            "endpoint", "endpoint", _("Give the endpoint's base URL (at most 500 characters).")
        )
    if not endpoint.model or len(endpoint.model) > 200:
        raise _refused(
            "endpoint_model",
            "endpoint_model",
            _("Give the model name the endpoint serves (at most 200 characters)."),
        )
    if len(endpoint.api_key) > MAX_KEY_CHARS or (
        endpoint.api_key and not KEY_CHARS.fullmatch(endpoint.api_key)
    ):
        raise _refused(
            "api_key",
            "api_key",
            _(
                "The API key must be printable ASCII characters without spaces, at most "
                "%(n)s of them."
            )
            % {"n": MAX_KEY_CHARS},
        )
    try:
        check_url(endpoint.url, allow_private=settings.SUBMISSION_ENDPOINT_ALLOW_PRIVATE)
    except AddressRefused as exc:
        raise _refused("endpoint", "endpoint_refused", str(exc)) from None


def generation_settings(version: BoardVersion) -> dict[str, Any]:
    """The version's fixed inference settings a generation takes (greedy, 1,024 new tokens
    where the version names none)."""
    fixed = version.fixed_settings or {}
    out: dict[str, Any] = {"temperature": 0.0, "max_new_tokens": 1024}
    for name, types in SETTING_TYPES.items():
        value = fixed.get(name)
        if isinstance(value, types) and not isinstance(value, bool):
            out[name] = value
    out["max_new_tokens"] = min(int(out["max_new_tokens"]), MAX_NEW_TOKENS)
    return out


def endpoint_submit(
    *,
    participant: Participant,
    board: Leaderboard,
    version: BoardVersion,
    endpoint: Endpoint,
    meta: Metadata,
    actor: Any,
    queue: bool = True,
) -> Submission:
    """Store the submission and start generating its answers through the endpoint, or refuse
    it whole (SubmissionRefused)."""
    assert version.leaderboard_id == board.pk
    _check_limits(participant, board, version)
    endpoint_check(endpoint)
    ids = version_instruction_ids(version)
    if not ids:
        raise _refused("", "empty_version", _("This version has no instructions to answer."), 409)
    fixed = generation_settings(version)
    with transaction.atomic():
        Participant.objects.select_for_update().get(pk=participant.pk)
        _check_limits(participant, board, version)
        running = Submission.objects.filter(participant=participant, state=State.GENERATING).first()
        if running is not None:
            raise _refused(
                "",
                "endpoint_busy",
                _(
                    "Your submission %(id)s is still being generated: "
                    "wait for it to end or cancel it."
                )
                % {"id": running.pk},
                409,
            )
        submission = Submission.objects.create(
            participant=participant,
            leaderboard=board,
            version=version,
            state=State.GENERATING,
            model_name=meta.model_name,
            model_version=meta.model_version,
            parameters=meta.parameters,
            inference_settings=fixed,
            gpus=meta.gpus,
            logs=meta.logs,
            endpoint=endpoint.url,
            endpoint_model=endpoint.model,
            judge_config_id=version.judge_config_id,
        )
        try:
            config = config_save(
                name=f"submission #{submission.pk}",
                model_name=meta.model_name,
                model_version=f"{meta.model_version} #{submission.pk}",
                backend="openai",
                endpoint=endpoint.url,
                endpoint_model=endpoint.model,
                guarded=True,
                batch_size=settings.SUBMISSION_ENDPOINT_BATCH,
                created_by=actor if getattr(actor, "is_authenticated", False) else None,
                **fixed,
            )
        except GenerationError as exc:  # nothing stays: the exception rolls the block back
            raise _refused(
                exc.field,
                "fixed_settings",
                _("The version's fixed settings cannot be used: %(e)s") % {"e": exc},
                409,
            ) from None
        model = config.model
        assert model is not None
        # Never "human" (the human baseline's mark): whose it is, as a participant.
        model.provider = f"participant: {participant}"[:200]
        model.save(update_fields=["provider"])
        key_store(config, endpoint.api_key)
        run = generation_run_create(
            config=config,
            scope={
                "instructions": ids,
                "reserve": True,
                "keep_truncated": True,
                "sequential": True,
                "max_requests": len(ids) * settings.SUBMISSION_ENDPOINT_REQUESTS_PER_ITEM,
                "max_tokens": settings.SUBMISSION_ENDPOINT_MAX_TOKENS,
            },
            created_by=actor if getattr(actor, "is_authenticated", False) else None,
            enqueue=queue,
        )
        submission.model = model
        submission.generation_run = run
        submission.save(update_fields=["model", "generation_run"])
        SubmissionEvent.objects.create(
            submission=submission,
            actor=actor if getattr(actor, "is_authenticated", False) else None,
            old="",
            new=State.GENERATING,
            note=urlsplit(endpoint.url).hostname or "",
        )
    return submission


def generation_report(run: GenerationRun, model_id: int) -> dict[str, Any]:
    """What the participant reads of the generation: counts, tokens, and why items failed
    (the most frequent errors; an error text never holds the key: judge_worker's messages
    carry the URL and status only)."""
    outputs = Generation.objects.filter(run=run)
    agg = outputs.aggregate(
        done=Count("pk"),
        truncated=Count("pk", filter=Q(outcome=Generation.Outcome.TRUNCATED)),
        failed=Count("pk", filter=Q(outcome=Generation.Outcome.FAILED)),
        requests=Sum("attempts"),
        prompt=Sum("prompt_tokens"),
        generated=Sum("generated_tokens"),
    )
    answered = Answer.objects.filter(model_id=model_id).count()
    errors = Counter(
        (e or _("empty answer"))[:300]
        for e in outputs.filter(outcome=Generation.Outcome.FAILED).values_list("error", flat=True)
    )
    return {
        "items": run.total,
        "answered": answered,
        "truncated": agg["truncated"],
        "failed": run.total - answered,
        "requests": agg["requests"] or 0,
        "prompt_tokens": agg["prompt"] or 0,
        "generated_tokens": agg["generated"] or 0,
        "errors": [[text, n] for text, n in errors.most_common(SHOWN_ERRORS)],
    }


def generation_finished(run_id: int) -> None:
    """The generation run of an endpoint submission ended (generation.hooks.run_finished, a
    cancel, or the page noticing): the key is deleted; complete answers go on to scoring,
    anything less fails the submission with the report. Idempotent."""
    with transaction.atomic():
        submission = (
            Submission.objects.select_for_update(of=("self",))
            .filter(generation_run_id=run_id, state=State.GENERATING)
            .first()
        )
        run = GenerationRun.objects.filter(pk=run_id).first()
        if run is None:
            return
        if run.status in (RunStatus.RUNNING, RunStatus.PENDING) and not run.cancelled:
            return
        key_delete(run.config_id)
        if submission is None or submission.model_id is None:
            return
        report = generation_report(run, submission.model_id)
        submission.result = {"generation": report}
        if run.status == RunStatus.DONE and report["failed"] == 0:
            answers = dict(
                Answer.objects.filter(model_id=submission.model_id).values_list(
                    "instruction_id", "text"
                )
            )
            submission.answers = len(answers)
            submission.content_sha256 = content_fingerprint(answers)
            submission.message = ""
            submission.save(update_fields=["answers", "content_sha256"])
            _move(submission, State.UPLOADED)
            enqueue(JobKind.SUBMISSION, {"submission": submission.pk})
            return
        if run.cancelled:
            submission.message = _("Generation was cancelled; nothing was scored.")
        else:
            submission.message = _(
                "%(failed)s of %(items)s instructions got no answer from your endpoint, so "
                "nothing was scored. Fix the endpoint and submit again."
            ) % {"failed": report["failed"], "items": report["items"]}
        _move(submission, State.FAILED, note=submission.message)


def endpoint_cancel(submission: Submission, *, actor: Any) -> None:
    """The participant (or an admin) stops the generation: its key is deleted at once."""
    with transaction.atomic():
        locked = _locked(submission)
        if locked.state != State.GENERATING or locked.generation_run_id is None:
            raise StateError(_("Only a submission being generated can be cancelled."))
        run = GenerationRun.objects.get(pk=locked.generation_run_id)
        generation_cancel(run=run)
    generation_finished(run.pk)


def endpoint_refresh(submission: Submission) -> Submission:
    """A generating submission whose run has ended is finished now (the page asks)."""
    if submission.state == State.GENERATING and submission.generation_run_id:
        status = GenerationRun.objects.values_list("status", flat=True).get(
            pk=submission.generation_run_id
        )
        if status not in (RunStatus.RUNNING, RunStatus.PENDING):
            generation_finished(submission.generation_run_id)
            submission.refresh_from_db()
    return submission
