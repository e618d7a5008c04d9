"""Locust: simulated experts working through their queues on the scoring page.

Each user logs in with the next account of $LOAD_USERS (a JSON list), then repeats: GET
/queue/next/ (a redirect to the scoring page), GET the page, POST every score with a rationale
and a submission key, until it has submitted $LOAD_PER_EXPERT answers or its queue is empty.
Acknowledged submissions (302 after the POST) are appended to $LOAD_ACK, one assignment id a
line, to be compared with what the database stores. Run by loadtest/run.py.
"""

from __future__ import annotations

import json
import os
import re
import threading

import gevent
from locust import HttpUser, between, events, task
from locust.exception import StopUser

from tests.faults.experts import form

USERS = json.loads(os.environ.get("LOAD_USERS", "[]"))
PASSWORD = os.environ.get("LOAD_PASSWORD", "")
PER_EXPERT = int(os.environ.get("LOAD_PER_EXPERT", "3"))
ACK_PATH = os.environ.get("LOAD_ACK", "load-ack.txt")
CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ASSIGNMENT_RE = re.compile(r"/assignments/(\d+)/")
_accounts = iter(USERS)
_lock = threading.Lock()
_stopped = {"n": 0}


class Expert(HttpUser):
    wait_time = between(0.0, 0.2)

    def on_start(self) -> None:
        with _lock:
            # One simulated user per account: two sessions of one expert would be two tabs.
            username = next(_accounts, None)
        if username is None:
            # The runner may start a replacement for a user that finished while it was still
            # ramping up; every account is taken, so the replacement has nothing to do.
            raise StopUser
        self.username = username
        page = self.client.get("/accounts/login/", name="login page")
        token = CSRF_RE.findall(page.text)[0]
        response = self.client.post(
            "/accounts/login/",
            data={"username": self.username, "password": PASSWORD, "csrfmiddlewaretoken": token},
            allow_redirects=False,
            name="login",
        )
        if response.status_code != 302:
            raise StopUser
        self.submitted = 0

    def on_stop(self) -> None:
        # Every expert is done: end the run now rather than idle until --run-time. Only users
        # that took an account count: a replacement that found none (above) must not end the
        # run while a real expert is still working (CI once lost one expert's submissions so).
        if getattr(self, "username", None) is None:
            return
        with _lock:
            _stopped["n"] += 1
            last = _stopped["n"] == len(USERS)
        if last and self.environment.runner is not None:
            gevent.spawn_later(0.5, self.environment.runner.quit)

    @task
    def score_next_answer(self) -> None:
        if self.submitted >= PER_EXPERT:
            raise StopUser
        with self.client.get(
            "/queue/next/", allow_redirects=False, name="queue/next", catch_response=True
        ) as nxt:
            match = ASSIGNMENT_RE.search(nxt.headers.get("location", ""))
            if nxt.status_code != 302:
                nxt.failure(f"queue/next answered {nxt.status_code}")
                raise StopUser
            nxt.success()
        if not match:
            raise StopUser  # the queue is empty
        url = f"/assignments/{match.group(1)}/"
        page = self.client.get(url, name="assignment page")
        if page.status_code != 200:
            return
        with self.client.post(
            url, data=form(page.text), allow_redirects=False, name="submit", catch_response=True
        ) as response:
            if response.status_code != 302:
                response.failure(f"submit answered {response.status_code}")
                return
            response.success()
        self.submitted += 1
        with _lock, open(ACK_PATH, "a") as ack:
            ack.write(f"{match.group(1)}\n")


@events.init_command_line_parser.add_listener
def _no_extra_options(parser: object) -> None:
    """Everything comes from the environment (see the module docstring)."""
