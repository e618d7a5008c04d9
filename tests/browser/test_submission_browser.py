"""A participant uploads his answers in real Chromium and reads his private score; once an
admin publishes it, an anonymous visitor finds the model on the public board, with no output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from leaderboards.models import Visibility
from protocol.leaderboard import reported
from submissions.models import State, Submission
from submissions.services import publication_decide, publication_request
from tests.browser.conftest import login
from tests.conftest import PASSWORD, Personas
from tests.submissions.test_submissions import Bench, _answers, _csv, bench  # noqa: F401

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_participant_uploads_and_reads_his_private_score_then_the_public_board(
    live_server: Any,
    page: Any,
    bench: Bench,  # noqa: F811 (the imported fixture)
    personas: Personas,
    tmp_path: Path,
) -> None:
    answers = tmp_path / "answers.csv"
    answers.write_bytes(_csv(_answers(bench, "browser ")))
    login(page, live_server.url, "pat", PASSWORD)
    page.goto(f"{live_server.url}/submissions/")
    page.click("#open-boards a.button")
    page.wait_for_url("**/submissions/new/bench/")
    page.set_input_files("input[name=file]", str(answers))
    page.fill("input[name=model_name]", "BrowserLM")
    page.fill("input[name=model_version]", "2.0")
    page.fill("input[name=parameters]", "3B")
    page.fill("textarea[name=inference_settings]", '{"temperature": 0}')
    page.fill("input[name=gpus]", "1× H100")
    page.fill("textarea[name=logs]", "https://example.org/logs")
    page.click("#submission-form button")
    page.wait_for_url("**/submissions/*/")
    page.wait_for_selector("#submission-score")
    submission = Submission.objects.get()
    assert submission.state == State.SCORED
    score = page.inner_text("#submission-score")
    # The page reports the stored [0, 1] mean on POLLUX's 0–2 scale (docs/leaderboards.md).
    assert score.replace(",", ".") == f"{reported(submission.result['mean']):.3f}"
    assert "Private" in page.content() or "видите только вы" in page.content()

    # Published by an admin: the board, public, shows the model to an anonymous visitor.
    publication_request(submission, actor=None)
    publication_decide(submission, approve=True, reason="", actor=personas.admin)
    bench.board.visibility = Visibility.PUBLIC
    bench.board.save()
    page.context.clear_cookies()
    page.goto(f"{live_server.url}/leaderboards/bench/?source=judge:{submission.judge_config_id}")
    row = page.locator("#leaderboard-table tbody tr", has_text="BrowserLM")
    assert row.count() == 1
    content = page.content()
    assert "Ответ участника browser" not in content
