"""A closed test by endpoint (issue #30 items 5–7): a closed version's inputs are the admins'
only; a participant gives his model's OpenAI-compatible endpoint and the platform generates the
answers from the version's frozen texts, then scores them; a server that errors, hangs or cuts
answers short is reported; the key is stored encrypted, sent only to the endpoint and deleted
when the run ends, and appears on no page, in no log line and nowhere in the database after;
a private address is refused unless the setting allows it."""

from __future__ import annotations

import io
import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from leaderboards.models import BoardVersion
from leaderboards.versions import version_current, version_cut
from material.models import Answer, Instruction
from participants.models import Participant
from runs.models import EndpointKey, RunConfig
from submissions import endpoints
from submissions.models import State, Submission
from submissions.services import Metadata, SubmissionRefused
from tests.conftest import Personas, make_user
from tests.submissions.test_submissions import Bench, _answers, _csv

pytestmark = pytest.mark.django_db(transaction=False)

KEY = "sk-closed-SECRET-7f3a9c"


@contextmanager
def model_server(behave: Callable[[str], str] = lambda prompt: "ok") -> Iterator[dict[str, Any]]:
    """The participant's model: answers each prompt by `behave(prompt)`: "ok" (a complete
    answer), "cut" (finish_reason "length"), "error" (HTTP 500, always), "hang" (sleeps past
    the timeout). Records the prompts and the Authorization headers it received."""
    state: dict[str, Any] = {"prompts": [], "auth": set(), "requests": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            prompt = str(body["messages"][-1]["content"])
            with lock:
                state["requests"] += 1
                state["prompts"].append(prompt)
                state["auth"].add(self.headers.get("Authorization"))
            mode = behave(prompt)
            if mode == "hang":
                time.sleep(3)
            if mode == "error":
                return self._send({"error": {"message": "model crashed"}}, 500)
            finish = "length" if mode == "cut" else "stop"
            choice = {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": f"Ответ модели: {prompt[:20]}"},
            }
            self._send(
                {"choices": [choice], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}
            )

        def _send(self, body: dict[str, Any], status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):  # a client that timed out
                self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/v1"
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _closed(b: Bench) -> BoardVersion:
    version_current(b.board)
    return version_cut(b.board, actor=None, note="closed", closed=True)


def _form(url: str, **extra: Any) -> dict[str, Any]:
    return {"model_name": "PatLM", "model_version": "2.0", "parameters": "7B", "endpoint": url,
            "endpoint_model": "pat-7b", "api_key": KEY, **extra}  # fmt: skip


def _post(b: Bench, capture: Any, data: dict[str, Any], version: int = 2) -> Any:
    url = reverse("submission_new", args=[b.board.slug]) + f"?version={version}"
    with capture(execute=True):
        return b.client.post(url, data)


@pytest.fixture
def allow_loopback(settings: Any) -> Any:
    settings.SUBMISSION_ENDPOINT_ALLOW_PRIVATE = True
    settings.SUBMISSION_ENDPOINT_MAX_RETRIES = 1
    settings.SUBMISSION_ENDPOINT_TIMEOUT_S = 1.0
    return settings


def test_a_closed_versions_inputs_are_the_admins_only_and_take_no_file(
    bench: Bench, personas: Personas
) -> None:
    _closed(bench)
    url = reverse("submission_inputs", args=[bench.board.slug, "jsonl"])
    assert bench.client.get(url + "?version=1").status_code == 200
    for fmt in ("jsonl", "xlsx"):
        refused = bench.client.get(
            reverse("submission_inputs", args=[bench.board.slug, fmt]) + "?version=2"
        )
        assert refused.status_code == 403
    admin = Client()
    admin.force_login(personas.admin)
    assert admin.get(url + "?version=2").status_code == 200
    # The upload page of a closed version asks for an endpoint; a file is refused by the service.
    page = bench.client.get(reverse("submission_new", args=[bench.board.slug]) + "?version=2")
    assert (
        page.status_code == 200
        and b'name="endpoint"' in page.content
        and b'type="file"' not in page.content
    )
    from submissions.services import submission_upload

    path = io.BytesIO(_csv(_answers(bench)))
    import tempfile
    from pathlib import Path

    with tempfile.NamedTemporaryFile(suffix=".csv") as f:
        f.write(path.getvalue())
        f.flush()
        with pytest.raises(SubmissionRefused) as refused_file:
            submission_upload(
                participant=bench.participant, board=bench.board, path=Path(f.name),
                file_name="a.csv", actor=None, version=BoardVersion.objects.get(number=2),
                meta=Metadata("M", "1", "7B", "x", "y"),
            )  # fmt: skip
    assert refused_file.value.status == 409 and "closed test" in str(refused_file.value)


def test_closed_inputs_by_persona(bench: Bench, personas: Personas) -> None:
    """The closed version's inputs, both formats, for every kind of user: the admins only; the
    open version's for the participant and the admins (the board is internal)."""
    _closed(bench)
    revoked_user = make_user("revoked")
    Participant.objects.create(user=revoked_user, organisation="Gone", approved=False)
    cases = {
        "anonymous": (None, 302, 302),
        "expert": (personas.expert_a.user, 403, 403),
        "supervisor": (personas.supervisor_a, 403, 403),
        "revoked participant": (revoked_user, 403, 403),
        "participant": (bench.participant.user, 200, 403),
        "admin": (personas.admin, 200, 200),
    }
    for who, (user, open_status, closed_status) in cases.items():
        client = Client()
        if user is not None:
            client.force_login(user)
        for fmt in ("jsonl", "xlsx"):
            url = reverse("submission_inputs", args=[bench.board.slug, fmt])
            got = (
                client.get(url + "?version=1").status_code,
                client.get(url + "?version=2").status_code,
            )
            assert got == (open_status, closed_status), (who, fmt, got)


def test_an_endpoint_is_asked_the_frozen_texts_scored_and_its_key_forgotten(
    bench: Bench, django_capture_on_commit_callbacks: Any, allow_loopback: Any,
    personas: Personas, caplog: Any,
) -> None:  # fmt: skip
    closed = _closed(bench)
    frozen = {i.instruction_id: i.text for i in closed.items.all()}
    # An edit after the cut: the endpoint must still be asked the frozen text.
    first = bench.instructions[0]
    Instruction.objects.filter(pk=first.pk).update(text=first.text + " ПРАВКА")
    caplog.set_level(logging.DEBUG)
    with model_server() as server:
        response = _post(bench, django_capture_on_commit_callbacks, _form(server["url"]))
    assert response.status_code == 302, response.content.decode()[:1500]
    s = Submission.objects.get()
    assert s.state == State.SCORED, (s.state, s.message)
    assert sorted(server["prompts"]) == sorted(frozen.values())
    assert server["auth"] == {f"Bearer {KEY}"}
    g = s.result["generation"]
    assert (g["items"], g["answered"], g["failed"], g["truncated"]) == (3, 3, 0, 0)
    assert g["requests"] == 3 and s.result["mean"] is not None
    assert s.generation_run is not None and s.generation_run.created_by == bench.participant.user
    # The answers are the submission's, reserved (never expert work unless an admin sends them).
    answers = Answer.objects.filter(model=s.model)
    assert answers.count() == 3 and all(hasattr(a, "reserved") for a in answers)
    assert not EndpointKey.objects.exists()
    # Nowhere after: the participant's and the admin's pages, the generation run's page, the
    # log records, the whole database.
    admin = Client()
    admin.force_login(personas.admin)
    pages = [
        bench.client.get(reverse("submission", args=[s.pk])),
        admin.get(reverse("submission", args=[s.pk])),
        admin.get(reverse("generation_run", args=[s.generation_run_id])),
    ]
    for page in pages:
        assert page.status_code == 200 and KEY.encode() not in page.content
    assert b"generation-report" in pages[0].content
    assert KEY not in caplog.text
    out = io.StringIO()
    call_command("dumpdata", stdout=out)
    assert KEY not in out.getvalue()


def test_errors_hangs_and_cut_answers_are_reported_without_the_key(
    bench: Bench, django_capture_on_commit_callbacks: Any, allow_loopback: Any
) -> None:
    closed = _closed(bench)
    texts = [i.text for i in closed.items.order_by("instruction_id")]
    modes = {texts[0]: "error", texts[1]: "hang", texts[2]: "cut"}
    with model_server(lambda prompt: modes[prompt]) as server:
        response = _post(bench, django_capture_on_commit_callbacks, _form(server["url"]))
    assert response.status_code == 302
    s = Submission.objects.get()
    assert s.state == State.FAILED and "2 of 3" in s.message, s.message
    g = s.result["generation"]
    assert (g["answered"], g["truncated"], g["failed"]) == (1, 1, 2)
    errors = " ".join(text for text, _n in g["errors"])
    assert "500" in errors and ("timed out" in errors.lower() or "timeout" in errors.lower())
    assert KEY not in json.dumps(s.result) + s.message
    assert not EndpointKey.objects.exists()
    # Retried once each (SUBMISSION_ENDPOINT_MAX_RETRIES = 1): the error and the hang twice.
    assert server["requests"] == 5
    # An admin cannot score it again: the key is gone, the participant submits again.
    assert s.judge_run is None and s.answers == 0


def test_a_private_address_is_refused_unless_the_setting_allows_it(
    bench: Bench, django_capture_on_commit_callbacks: Any, settings: Any
) -> None:
    _closed(bench)
    settings.SUBMISSION_ENDPOINT_ALLOW_PRIVATE = False
    for url in ("http://127.0.0.1:9/v1", "http://169.254.169.254/latest", "http://10.0.0.7/v1",
                "http://localhost:8000/v1"):  # fmt: skip
        response = _post(bench, django_capture_on_commit_callbacks, _form(url))
        assert response.status_code == 422, url
        assert b"endpoint" in response.content and KEY.encode() not in response.content
    assert not Submission.objects.exists() and not RunConfig.objects.filter(guarded=True).exists()
    assert not EndpointKey.objects.exists()


def test_one_endpoint_at_a_time_and_a_cancel_forgets_the_key(
    bench: Bench, allow_loopback: Any
) -> None:
    version = _closed(bench)
    meta = Metadata("PatLM", "2.0", "7B", "endpoint", "")
    given = endpoints.Endpoint("http://127.0.0.1:9/v1", "pat-7b", KEY)
    s = endpoints.endpoint_submit(
        participant=bench.participant, board=bench.board, version=version, endpoint=given,
        meta=meta, actor=None, queue=False,
    )  # fmt: skip
    assert s.state == State.GENERATING and EndpointKey.objects.count() == 1
    assert KEY not in EndpointKey.objects.get().token  # encrypted at rest
    from runs.secrets import key_read

    assert key_read(RunConfig.objects.get(guarded=True)) == KEY
    with pytest.raises(SubmissionRefused) as busy:
        endpoints.endpoint_submit(
            participant=bench.participant, board=bench.board, version=version, endpoint=given,
            meta=meta, actor=None, queue=False,
        )  # fmt: skip
    assert busy.value.status == 409
    response = bench.client.post(reverse("submission_cancel", args=[s.pk]))
    assert response.status_code == 302
    s.refresh_from_db()
    assert s.state == State.FAILED and "cancelled" in s.message
    assert s.generation_run is not None and s.generation_run.cancelled
    assert not EndpointKey.objects.exists()


def test_a_broken_chain_of_batches_is_sent_again_by_the_beat(
    bench: Bench, django_capture_on_commit_callbacks: Any, allow_loopback: Any
) -> None:
    """A sequential run whose next batch was never sent (its worker died between the end of one
    batch and the sending of the next) is restarted by the beat's check, one batch at a time."""
    from generation.tasks import resend_stalled_generation

    allow_loopback.SUBMISSION_ENDPOINT_BATCH = 1
    version = _closed(bench)
    with model_server() as server:
        given = endpoints.Endpoint(server["url"], "pat-7b", KEY)
        s = endpoints.endpoint_submit(
            participant=bench.participant, board=bench.board, version=version, endpoint=given,
            meta=Metadata("PatLM", "2.0", "7B", "", ""), actor=None, queue=False,
        )  # fmt: skip
        run = s.generation_run
        assert run is not None and run.batches.count() == 3 and server["requests"] == 0
        with django_capture_on_commit_callbacks(execute=True):
            sent = resend_stalled_generation()
        assert len(sent) == 1  # the first queued batch; the chain sends the others
        assert server["requests"] == 3
    s.refresh_from_db()
    assert s.state == State.SCORED, (s.state, s.message)
    with django_capture_on_commit_callbacks(execute=True):
        assert resend_stalled_generation() == []  # nothing left to send
