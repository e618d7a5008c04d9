"""The address guard and per-call limits of the openai backend (participants' endpoints).

check_url's refusals; the guarded backend against a local OpenAI-compatible server (refused on
127.0.0.1 without a request reaching it, pinned to the checked address when private addresses
are allowed, DNS rebinding caught at the request); redirects never followed; the request budget
shared by a call's threads, retries included; the API key in no error text, repr or log record.
"""

from __future__ import annotations

import json
import logging
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from judge_worker.backends.factory import OPENAI, BackendSpec, build_backend
from judge_worker.backends.guard import AddressRefused, GuardedTransport, check_url
from judge_worker.backends.openai_compat import BUDGET_SPENT, OpenAIBackend, RequestBudget
from judge_worker.types import GenerationItem, JudgeItem
from tests.judging.fake_openai import fake_openai

KEY = "sk-test-SECRET123"
PUBLIC = "93.184.215.14"
REAL_GETADDRINFO = socket.getaddrinfo


def items(n: int) -> list[GenerationItem]:
    return [
        GenerationItem(f"i{k}", [{"role": "user", "content": f"вопрос {k}"}], 8) for k in range(n)
    ]


def backend(url: str, **options: Any) -> OpenAIBackend:
    options = {"max_retries": 2, "backoff_s": 0.01, "timeout_s": 5.0, **options}
    return OpenAIBackend(url, "m", **options)


@contextmanager
def recording_server(
    status: int = 200, headers: dict[str, str] | None = None
) -> Iterator[dict[str, Any]]:
    """A local server on 127.0.0.1 answering every POST with `status` (200: a chat
    completion) and `headers`, recording each request's path, Host and Authorization."""
    state: dict[str, Any] = {"requests": [], "port": 0}
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with lock:
                state["requests"].append(
                    {
                        "path": self.path,
                        "host": self.headers.get("Host"),
                        "authorization": self.headers.get("Authorization"),
                    }
                )
            body: dict[str, Any] = {"error": {"message": "no"}}
            if status == 200:
                message = {"role": "assistant", "content": "Ответ."}
                body = {"choices": [{"message": message, "finish_reason": "stop"}]}
            data = json.dumps(body).encode()
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state["port"] = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[list[str]]]) -> list[str]:
    """socket.getaddrinfo answering the names of `answers` (the nth lookup of a name gets its
    nth list, the last list for later lookups; an empty list: the name does not resolve), every
    other name (IP literals included) through the real resolver; returns the names looked up."""
    looked_up: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> list[Any]:
        name = host.decode() if isinstance(host, bytes) else str(host)
        looked_up.append(name)
        if name not in answers:
            return REAL_GETADDRINFO(host, port, *args, **kwargs)
        seen = looked_up.count(name)
        ips = answers[name][min(seen, len(answers[name])) - 1]
        if not ips:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        out: list[Any] = []
        for ip in ips:
            if ":" in ip:
                out.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (ip, port or 0, 0, 0)))
            else:
                out.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (ip, port or 0)))
        return out

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return looked_up


# -- check_url ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "why"),
    [
        ("http://127.0.0.1:8000/v1", "127.0.0.1 is a loopback address"),
        ("http://localhost:8000/v1", "loopback"),
        ("http://10.1.2.3/v1", "private"),
        ("https://192.168.0.5/v1", "private"),
        ("http://169.254.169.254/latest/meta-data", "link-local"),
        ("http://[::1]:8000/v1", "loopback"),
        ("http://[::ffff:127.0.0.1]/v1", "IPv4-mapped form of 127.0.0.1, a loopback"),
        ("http://[2002:7f00:1::]/v1", "6to4 form of 127.0.0.1"),
        ("http://0.0.0.0:8000/v1", "unspecified"),
        ("http://224.0.0.1/v1", "multicast"),
        ("http://100.64.0.1/v1", "not a public address"),
        ("https://user:hunter2@api.example.com/v1", "credentials belong in the key field"),
        ("https://:hunter2@api.example.com/v1", "credentials belong in the key field"),
        ("ftp://93.184.215.14/v1", "scheme ftp is refused"),
        ("//93.184.215.14/v1", "scheme (none) is refused"),
        ("http:///v1", "no host"),
        ("http://nothing-here.invalid/v1", "nothing-here.invalid could not be resolved"),
    ],
)
def test_check_url_refuses(url: str, why: str) -> None:
    with pytest.raises(AddressRefused) as refused:
        check_url(url)
    assert why in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_check_url_names_the_host_never_the_query_or_credentials() -> None:
    with pytest.raises(AddressRefused) as refused:
        check_url("http://127.0.0.1:9/v1?token=abc123#frag")
    message = str(refused.value)
    assert "127.0.0.1" in message and "private, loopback and link-local" in message
    assert "abc123" not in message and "token" not in message


def test_check_url_accepts_a_public_literal_without_a_lookup(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looked_up = fake_dns(monkeypatch, {})
    check_url(f"https://{PUBLIC}/v1")
    check_url("http://[2606:4700:4700::1111]:8443/v1")
    assert looked_up == []


def test_check_url_allow_private() -> None:
    check_url("http://127.0.0.1:8000/v1", allow_private=True)
    check_url("http://localhost:8000/v1", allow_private=True)
    with pytest.raises(AddressRefused, match="could not be resolved"):
        check_url("http://nothing-here.invalid/v1", allow_private=True)
    with pytest.raises(AddressRefused, match="credentials"):
        check_url("http://u:p@127.0.0.1/v1", allow_private=True)


def test_check_url_refuses_if_any_address_is_private(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_dns(monkeypatch, {"mixed.test": [[PUBLIC, "10.0.0.7"]], "public.test": [[PUBLIC]]})
    check_url("https://public.test/v1")
    with pytest.raises(AddressRefused, match=r"mixed\.test resolves to 10\.0\.0\.7, a private"):
        check_url("https://mixed.test/v1")


# -- the guarded backend against a local server ------------------------------------------------


def test_guarded_backend_refuses_loopback_without_a_request() -> None:
    with fake_openai() as server:
        outs = backend(server["url"], guarded=True).generate(items(3))
        judged = backend(server["url"], guarded=True).judge(
            [JudgeItem("j", "p", [{"role": "user", "content": "q"}], (0.0, 1.0))]
        )
    assert server["requests"] == 0
    for out in outs:
        assert (out.text, out.finish_reason, out.attempts) == ("", "error", 1)  # not retried
        assert "127.0.0.1 is a loopback address" in out.error
    assert not judged[0].parse.ok and "loopback" in (judged[0].parse.error or "")


def test_guarded_backend_with_private_allowed_keeps_the_host_header() -> None:
    with recording_server() as server:
        url = f"http://localhost:{server['port']}/v1"
        outs = backend(url, guarded=True, allow_private=True, api_key=KEY).generate(items(2))
    assert [(o.text, o.finish_reason, o.error, o.attempts) for o in outs] == [
        ("Ответ.", "stop", "", 1)
    ] * 2
    assert [r["host"] for r in server["requests"]] == [f"localhost:{server['port']}"] * 2
    assert server["requests"][0]["path"] == "/v1/chat/completions"
    assert server["requests"][0]["authorization"] == f"Bearer {KEY}"


def test_guarded_backend_connects_to_the_address_it_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pinned.test resolves once (the guard's lookup); a second lookup (a client resolving the
    # name itself) would find nothing, so the answer proves the connection went to the IP.
    with recording_server() as server:
        looked_up = fake_dns(monkeypatch, {"pinned.test": [["127.0.0.1"], []]})
        url = f"http://pinned.test:{server['port']}/v1"
        [out] = backend(url, guarded=True, allow_private=True).generate(items(1))
    assert (out.text, out.error) == ("Ответ.", "")
    assert looked_up.count("pinned.test") == 1
    assert server["requests"][0]["host"] == f"pinned.test:{server['port']}"


def test_dns_rebinding_is_caught_at_the_request(monkeypatch: pytest.MonkeyPatch) -> None:
    with fake_openai() as server:
        port = server["url"].rsplit(":", 1)[1].split("/")[0]
        url = f"http://rebind.test:{port}/v1"
        fake_dns(monkeypatch, {"rebind.test": [[PUBLIC], ["127.0.0.1"]]})
        check_url(url)  # the first answer is public
        [out] = backend(url, guarded=True).generate(items(1))
    assert server["requests"] == 0
    assert out.finish_reason == "error"
    assert "rebind.test resolves to 127.0.0.1, a loopback address" in out.error


def test_pinning_over_https_keeps_the_name_for_tls(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if len(seen) == 1:  # the first address does not answer: the next one is tried
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, json={"ok": True})

    fake_dns(monkeypatch, {"api.example.test": [["2606:4700:4700::1111", PUBLIC]]})
    transport = GuardedTransport(transport=httpx.MockTransport(handle))
    with httpx.Client(transport=transport) as client:
        response = client.post("https://api.example.test/v1/chat/completions?x=1", json={})
    assert response.json() == {"ok": True}
    assert response.request.url.host == "api.example.test"  # the caller's request unchanged
    first, second = seen
    assert str(first.url) == "https://[2606:4700:4700::1111]/v1/chat/completions?x=1"
    assert str(second.url) == f"https://{PUBLIC}/v1/chat/completions?x=1"
    for request in seen:
        assert request.headers["Host"] == "api.example.test"
        assert request.extensions["sni_hostname"] == "api.example.test"


@pytest.mark.parametrize("guarded", [True, False])
def test_a_redirect_is_an_error_and_never_followed(guarded: bool) -> None:
    with recording_server() as elsewhere:
        target = f"http://127.0.0.1:{elsewhere['port']}/v1/chat/completions"
        with recording_server(302, {"Location": target}) as server:
            url = f"http://127.0.0.1:{server['port']}/v1"
            options = {"guarded": True, "allow_private": True} if guarded else {}
            [out] = backend(url, max_retries=3, **options).generate(items(1))
    assert len(server["requests"]) == 1 and elsewhere["requests"] == []
    assert (out.text, out.finish_reason, out.attempts) == ("", "error", 1)
    assert out.error == (
        "the endpoint answered with a redirect (HTTP 302); redirects are not followed"
    )


# -- the request budget ------------------------------------------------------------------------


def test_budget_caps_the_requests_of_a_call() -> None:
    budget = RequestBudget(3)
    with fake_openai() as server:
        outs = backend(server["url"], concurrency=4).generate(items(5), budget=budget)
    assert server["requests"] == 3
    assert (budget.spent, budget.left) == (3, 0)
    answered = [o for o in outs if o.finish_reason == "stop"]
    refused = [o for o in outs if o.finish_reason == "error"]
    assert len(answered) == 3 and all(o.attempts == 1 for o in answered)
    assert len(refused) == 2
    for out in refused:
        assert (out.error, out.attempts, out.text) == (BUDGET_SPENT, 0, "")
    assert [o.item_id for o in outs] == [f"i{k}" for k in range(5)]


def test_retries_take_from_the_budget() -> None:
    budget = RequestBudget(10)
    with fake_openai(fail_first=2) as server:
        outs = backend(server["url"], concurrency=1, max_retries=3).generate(
            items(2), budget=budget
        )
    assert [(o.finish_reason, o.attempts) for o in outs] == [("stop", 3), ("stop", 1)]
    assert server["requests"] == budget.spent == 4


def test_a_budget_spent_between_retries_ends_the_item() -> None:
    budget = RequestBudget(2)
    with fake_openai(fail_first=5) as server:
        [out] = backend(server["url"], max_retries=5).generate(items(1), budget=budget)
    assert server["requests"] == 2 and out.attempts == 2
    assert out.finish_reason == "error"
    assert out.error.startswith(BUDGET_SPENT) and "HTTP 500" in out.error


def test_without_a_budget_nothing_changes() -> None:
    with fake_openai(fail_first=1) as server:
        outs = backend(server["url"]).generate(items(2))
    assert server["requests"] == 3
    assert sorted(o.attempts for o in outs) == [1, 2]
    with pytest.raises(ValueError, match="negative"):
        RequestBudget(-1)


# -- the key stays secret ----------------------------------------------------------------------


def secret_spec(url: str, **fields: Any) -> BackendSpec:
    return BackendSpec(
        kind=OPENAI,
        endpoint=url,
        endpoint_model="m",
        api_key=KEY,
        options={"max_retries": 1, "backoff_s": 0.01, "timeout_s": 2.0, "concurrency": 2},
        **fields,
    )


def test_spec_repr_and_comparison_leave_the_key_out() -> None:
    spec = secret_spec("http://127.0.0.1:9/v1", guarded=True)
    assert "SECRET123" not in repr(spec) and "api_key=" not in repr(spec)
    assert spec == BackendSpec(
        kind=OPENAI,
        endpoint=spec.endpoint,
        endpoint_model="m",
        options=spec.options,
        guarded=True,
    )


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("500", "HTTP 500"),
        ("400", "400 Bad Request"),
        ("closed", "request failed: ConnectError"),
        ("refused", "loopback"),
    ],
)
def test_the_key_is_in_no_error_nor_log(
    scenario: str, expected: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="httpx")
    caplog.set_level(logging.DEBUG, logger="httpcore")
    status = {"500": 500, "400": 400}.get(scenario, 200)
    with recording_server(status) as server:
        port = _closed_port() if scenario == "closed" else server["port"]
        spec = secret_spec(
            f"http://127.0.0.1:{port}/v1", guarded=True, allow_private=scenario != "refused"
        )
        built = build_backend(spec)
        outs = built.generate(items(2))
        judged = built.judge([JudgeItem("j", "p", [{"role": "user", "content": "q"}], (0.0,))])
    assert isinstance(built, OpenAIBackend) and built.guarded
    for out in outs:
        assert out.finish_reason == "error" and expected in out.error
        assert "SECRET123" not in out.error
    assert "SECRET123" not in (judged[0].parse.error or "")
    if scenario in ("500", "400"):  # the key was sent (so it could have leaked)
        assert server["requests"][0]["authorization"] == f"Bearer {KEY}"
    if scenario != "refused":
        assert caplog.records  # httpx/httpcore did log the call
    for record in caplog.records:
        assert "SECRET123" not in record.getMessage()
    assert "SECRET123" not in caplog.text
    assert "SECRET123" not in repr(spec)


def test_a_key_no_header_can_carry_is_refused_without_quoting_it() -> None:
    for bad in (KEY + "\n", "sk test SECRET123", "sk-тест-SECRET123"):
        with pytest.raises(ValueError, match="printable ASCII") as refused:
            OpenAIBackend("http://127.0.0.1:9/v1", "m", api_key=bad)
        assert "SECRET123" not in str(refused.value)


def test_a_guarded_backend_builds_its_own_client() -> None:
    with pytest.raises(ValueError, match="own client"):
        OpenAIBackend("http://127.0.0.1:9/v1", "m", guarded=True, client=httpx.Client())
