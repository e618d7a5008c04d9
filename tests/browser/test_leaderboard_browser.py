"""An anonymous visitor reads a public leaderboard in real Chromium: ranked models, a filter,
no output anywhere on the page."""

from __future__ import annotations

import re
from typing import Any

import pytest

from leaderboards.models import Visibility
from leaderboards.services import snapshot_store
from tests.leaderboards.test_leaderboards import SECRET, World, world  # noqa: F401 (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_anonymous_visitor_reads_and_filters_a_public_leaderboard(
    live_server: Any,
    page: Any,
    world: World,  # noqa: F811 (the imported fixture)
) -> None:
    world.board.visibility = Visibility.PUBLIC
    world.board.save()
    snapshot_store(world.board, rounds=100)

    page.goto(f"{live_server.url}/leaderboards/")
    page.click("#leaderboards a")
    page.wait_for_url("**/leaderboards/pollux/")
    names = page.locator("#leaderboard-table tbody tr td:nth-child(2)").all_inner_texts()
    assert names[0].startswith("Human") and any(n.startswith("Alpha") for n in names)
    assert SECRET not in page.content()
    assert page.locator("#leaderboard-admin").count() == 0  # no admin action for a visitor

    criterion = str(world.general[0].pk)
    page.select_option("select[name=criterion]", criterion)
    page.click("#leaderboard-filters button")
    page.wait_for_url(f"**criterion={criterion}**")
    beta = page.locator("#leaderboard-table tbody tr", has_text="Beta")
    # 0.75, reported on POLLUX's 0–2 scale in the page's language (Russian by default: "1,500").
    assert re.search(r"\b1[.,]500\b", beta.inner_text())
    assert SECRET not in page.content()
