"""Login throttling, session expiry, CSRF on every state-changing request, production settings."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import time_machine
from django.test import Client
from django.urls import reverse

from tests.conftest import PASSWORD, Personas
from tests.security.conftest import World
from tests.security.test_access_matrix import ACCESS, PERSONAS, REDIRECT, _clients, _expected

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


def _login(client: Client, username: str, password: str) -> Any:
    return client.post(reverse("login"), {"username": username, "password": password})


def test_it_locks_out_a_login_after_too_many_failures(personas: Personas, settings: Any) -> None:
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    client = Client(REMOTE_ADDR="127.0.0.9")
    for _ in range(3):
        response = _login(client, "expert_a", "wrong-password")
        assert response.status_code in (200, 429)
    # The right password no longer opens the door while the lockout lasts.
    locked = _login(client, "expert_a", PASSWORD)
    assert locked.status_code == 429
    assert "_auth_user_id" not in client.session
    # Another account from the same address is not punished for it (username + ip lockout).
    other = _login(Client(REMOTE_ADDR="127.0.0.9"), "expert_b", PASSWORD)
    assert other.status_code == 302


def test_it_lets_a_user_in_below_the_failure_limit(personas: Personas, settings: Any) -> None:
    settings.AXES_ENABLED = True
    settings.AXES_FAILURE_LIMIT = 3
    client = Client(REMOTE_ADDR="127.0.0.10")
    assert _login(client, "expert_a", "wrong-password").status_code == 200
    assert _login(client, "expert_a", PASSWORD).status_code == 302


def test_a_session_expires_after_its_age(personas: Personas, settings: Any) -> None:
    settings.SESSION_COOKIE_AGE = 1
    client = Client()
    assert _login(client, "expert_a", PASSWORD).status_code == 302
    assert client.get(reverse("queue")).status_code == 200
    with time_machine.travel(timedelta(seconds=2.1)):
        response = client.get(reverse("queue"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_logout_ends_the_session_on_the_server(personas: Personas) -> None:
    client = Client()
    assert _login(client, "expert_a", PASSWORD).status_code == 302
    stolen = client.cookies["sessionid"].value
    client.post(reverse("logout"))
    thief = Client()
    thief.cookies["sessionid"] = stolen
    assert thief.get(reverse("queue")).status_code == 302


def _state_changing() -> list[tuple[str, str]]:
    """(route, persona) for every declared POST that some persona is allowed to make."""
    cases = []
    for key, row in ACCESS.items():
        expected = row.methods.get("POST")
        if expected is None:
            continue
        for persona in PERSONAS:
            on_a = _expected(expected[persona])[0]
            if on_a not in (403, 404, 405, "LOGIN"):
                cases.append((key, persona))
                break
    return cases


def test_every_state_changing_request_needs_a_csrf_token(world: World) -> None:
    """A POST without the token is refused (403) for every route, as a form and as htmx."""
    cases = _state_changing()
    assert len(cases) > 20  # the table drives this test: it must not silently shrink to nothing
    logged_in = _clients(world)
    failures = []
    for key, persona in cases:
        row = ACCESS[key]
        kwargs = row.kwargs(world, world.a) if row.kwargs else {}
        url = reverse(key, kwargs=kwargs) if kwargs else reverse(key)
        client = Client(enforce_csrf_checks=True)
        client.cookies = logged_in[persona].cookies
        for headers in ({}, {"HX-Request": "true"}):
            response = client.post(url, {"x": "1"}, headers=headers)
            if response.status_code != 403:
                failures.append(f"POST {url} as {persona} {headers}: {response.status_code}")
    assert not failures, "accepted without a CSRF token:\n" + "\n".join(failures)


def test_a_post_with_the_token_from_the_page_is_accepted(world: World) -> None:
    """The CSRF test above is not vacuous: the same client with a token gets through."""
    client = Client(enforce_csrf_checks=True)
    client.force_login(world.personas.supervisor_a)
    page = client.get(reverse("console_panel", args=[world.a.panel.pk]))
    token = str(page.context["csrf_token"])
    response = client.post(
        reverse("console_notices_read", args=[world.a.panel.pk]), {"csrfmiddlewaretoken": token}
    )
    assert response.status_code == 302
    htmx = client.post(
        reverse("console_notices_read", args=[world.a.panel.pk]),
        headers={"HX-Request": "true", "X-CSRFToken": token},
    )
    assert htmx.status_code in (200, 302)
    assert REDIRECT  # the table's outcome names are shared with this module


def _production_env() -> dict[str, str]:
    # A production process starts clean: the browser tests' DJANGO_ALLOW_ASYNC_UNSAFE (set in
    # this test process for Playwright) must not leak into it.
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "config.settings.production",
            "DJANGO_SECRET_KEY": secrets.token_urlsafe(64),
            "DJANGO_ALLOWED_HOSTS": "pollux.example.org",
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/postgres",
        }
    )
    return env


def test_check_deploy_reports_nothing_with_production_settings() -> None:
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "System check identified no issues" in output, output


PROBE = """
import json, django
django.setup()
from django.conf import settings
from django.test import Client
client = Client(HTTP_HOST="pollux.example.org")
# /healthz renders no template: the static manifest (collectstatic) is not needed here.
plain = client.get("/healthz")
page = client.get("/healthz", secure=True)
print(json.dumps({
    "redirect": [plain.status_code, plain.get("Location", "")],
    "headers": {k: page.get(k, "") for k in (
        "Strict-Transport-Security", "X-Frame-Options", "X-Content-Type-Options",
        "Referrer-Policy", "Cross-Origin-Opener-Policy")},
    "status": page.status_code,
    "csrf_cookie_secure": settings.CSRF_COOKIE_SECURE,
    "session": [settings.SESSION_COOKIE_SECURE, settings.SESSION_COOKIE_HTTPONLY,
                settings.SESSION_COOKIE_AGE],
    "debug": settings.DEBUG,
}))
"""


def test_production_sends_secure_headers_and_cookies() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE],
        cwd=ROOT,
        env=_production_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    seen = json.loads(result.stdout.strip().splitlines()[-1])
    # Plain HTTP is sent to HTTPS.
    assert seen["redirect"][0] == 301
    assert seen["redirect"][1].startswith("https://")
    assert seen["status"] == 200
    headers = seen["headers"]
    assert "max-age=" in headers["Strict-Transport-Security"]
    assert "includeSubDomains" in headers["Strict-Transport-Security"]
    assert headers["X-Frame-Options"] == "DENY"
    assert headers["X-Content-Type-Options"] == "nosniff"
    assert headers["Referrer-Policy"] == "same-origin"
    assert headers["Cross-Origin-Opener-Policy"] == "same-origin"
    assert seen["csrf_cookie_secure"] is True
    secure, httponly, age = seen["session"]
    assert secure and httponly and age <= 12 * 60 * 60
    assert seen["debug"] is False
