"""Real Chromium (Debian's package) driven by Playwright; the app runs in pytest's live_server."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.inflight import wait_until_idle

# Playwright's sync API runs an event loop in this thread; Django's ORM calls in the test are
# still synchronous and safe here.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not os.path.exists(CHROMIUM):
        pytest.fail(f"Chromium not found at {CHROMIUM}: install Debian's chromium package")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(locale="ru-RU")
    in_flight: set[Any] = set()
    # Playwright wants Python functions as handlers, not a set's bound builtins.
    context.on("request", lambda request: in_flight.add(request))
    context.on("requestfinished", lambda request: in_flight.discard(request))
    context.on("requestfailed", lambda request: in_flight.discard(request))
    page = context.new_page()
    page.set_default_timeout(15000)
    yield page
    # Requests the page caused are answered before the test's database is flushed: a request
    # holding row locks while the flush's TRUNCATE waits for them, and then waiting on a table the
    # TRUNCATE holds, is a deadlock. The browser's own view first (what it still waits for), then
    # the server's (a fetch the browser cancelled on navigation still runs there).
    deadline = time.monotonic() + 10
    while in_flight and time.monotonic() < deadline:
        page.wait_for_timeout(50)  # lets Playwright deliver the requests' events
    wait_until_idle()
    context.close()
    wait_until_idle()


def login(page: Any, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state("networkidle")
