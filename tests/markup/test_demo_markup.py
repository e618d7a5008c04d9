"""The demo seed's span markups: three texts, two experts' markups and an algorithm's each."""

from __future__ import annotations

from io import StringIO
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.urls import reverse

from demo.demo_data import DEMO_EXPERTS, DEMO_SUPERVISOR
from demo.demo_markup import (
    DEMO_MARKUP_SYSTEM,
    DEMO_PARTICIPANT,
    DEMO_SYSTEM,
    DEMO_TEXTS,
    DEMO_WORK_TEXTS,
)
from markup.contest import run_report
from markup.models import Markup, MarkupRun, MarkupSource, MarkupStatus, MarkupText


@pytest.mark.django_db
def test_the_demo_seeds_three_texts_with_three_markups_each(settings: Any, client: Any) -> None:
    settings.POLLUX_DEMO = True
    call_command("seed_demo", "--no-judge", stdout=StringIO())

    texts = MarkupText.objects.filter(external_id__startswith="demo-markup-")
    assert texts.count() == len(DEMO_TEXTS) == 3
    for text in texts:
        sources = sorted(text.markups.values_list("source", flat=True))
        # The shipped algorithm's markup, the demo contest run's copy of it, two experts'.
        assert sources == [MarkupSource.ALGORITHM] * 2 + [MarkupSource.EXPERT] * 2
        assert text.markups.filter(expert__isnull=False).count() == 2
        assert 400 <= len(text.text) <= 700
    assert Markup.objects.filter(author=DEMO_MARKUP_SYSTEM).count() == 3
    # The texts for the demo experts to mark themselves: two drafts each, in the Editing panel,
    # the first demo expert (the README's login) among them.
    work = MarkupText.objects.filter(external_id__startswith="demo-work-")
    assert work.count() == len(DEMO_WORK_TEXTS) == 2
    first_expert = DEMO_EXPERTS[0].username
    for text in work:
        drafts = text.markups.filter(status=MarkupStatus.DRAFT, panel__key="editing")
        assert drafts.count() == 2
        assert drafts.filter(expert__user__username=first_expert).exists()

    # Idempotent: a second run adds nothing.
    out = StringIO()
    call_command("seed_demo", "--no-judge", stdout=out)
    assert Markup.objects.count() == 9 + 4 + 3  # shipped, assigned drafts, the demo run's
    assert "span markups: created 0" in out.getvalue()
    assert "span markup work: 0 texts assigned" in out.getvalue()
    assert "markup contest: already present" in out.getvalue()

    # The contest: the participant's closed run over the three texts, scored by СТАР.
    run = MarkupRun.objects.get(system=DEMO_SYSTEM)
    report = run_report(run)
    assert report.answered == 3 and report.annulled == 0 and not report.void
    assert report.star is not None and 0 < report.star <= 100
    participant = get_user_model().objects.get(username=DEMO_PARTICIPANT.username)
    client.force_login(participant)
    board = client.get(reverse("markup_leaderboard"))
    assert board.status_code == 200 and DEMO_SYSTEM in board.content.decode()

    client.force_login(get_user_model().objects.get(username=DEMO_SUPERVISOR.username))
    page = client.get(reverse("markup_texts")).content.decode()
    assert all(f"demo-{item.key}" in page for item in DEMO_TEXTS)
    compare = client.get(reverse("markup_compare", args=[texts.first().pk]))  # type: ignore[union-attr]
    assert compare.status_code == 200
