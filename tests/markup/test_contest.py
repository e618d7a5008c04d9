"""The participants' markup sessions (markup.contest, markup.api): pull and paced release,
deadlines and annulment, the cap on markups per text, ignored texts, void runs, СТАР against
an independent computation, the leaderboard, and who may call what."""

from __future__ import annotations

import base64
from datetime import timedelta
from statistics import fmean
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from rest_framework.authtoken.models import Token

from markup import contest
from markup.models import (
    Markup,
    MarkupRun,
    MarkupRunItem,
    MarkupSample,
    MarkupSampleText,
    MarkupSource,
    MarkupText,
    SampleMode,
)
from markup.services import markup_store
from participants.models import Participant
from protocol.markup_format import MarkupDocument, default_meta
from protocol.spans import Fragment, pair_accuracy
from tests.conftest import PASSWORD, make_expert, make_user

pytestmark = pytest.mark.django_db

TEXT = "Читая книгу, снег падал. Мы одеваем шапки и идём гулять во двор."


def at(quote: str, code: str, **extra: Any) -> dict[str, Any]:
    start = TEXT.find(quote)
    return {
        "startSelection": start,
        "endSelection": start + len(quote),
        "type": code,
        "group": "error",
        **extra,
    }


GOOD = [at("одеваем", "Р.знач", correction="надеваем")]


def sample_of(n: int, **rules: Any) -> MarkupSample:
    sample = MarkupSample.objects.create(name=f"sample-{n}-{rules}", **rules)
    for i in range(n):
        text = MarkupText.objects.create(
            external_id=f"s{sample.pk}-{i}", text=f"{TEXT} №{i}", subject="rus"
        )
        MarkupSampleText.objects.create(sample=sample, text=text, position=i)
    return sample


def participant(name: str = "team", approved: bool = True) -> Participant:
    return Participant.objects.create(user=make_user(name), organisation=name, approved=approved)


def test_pull_release_response_time_and_the_last_markup_counts() -> None:
    sample = sample_of(2)
    run = contest.run_open(participant(), sample, "Baseline")
    t0 = timezone.now()
    first = contest.run_next(run, now=t0).item
    assert first is not None and first.position == 0
    assert first.deadline_at == t0 + timedelta(seconds=60)
    accepted = contest.run_submit(
        run, first.text_id, {"selections": []}, now=t0 + timedelta(seconds=2)
    )
    assert accepted.item.response_ms == 2000 and accepted.item.submissions == 1
    again = contest.run_submit(
        run, first.text_id, {"selections": GOOD}, now=t0 + timedelta(seconds=3)
    )
    assert again.markup.pk == accepted.markup.pk  # one markup per text: the last accepted
    again.markup.refresh_from_db()
    assert again.markup.selections[0]["type"] == "Р.знач"
    assert again.markup.source == MarkupSource.ALGORITHM
    second = contest.run_next(run, now=t0).item
    assert second is not None and second.position == 1
    assert contest.run_next(run, now=t0).done


def test_at_most_ten_markups_per_text_and_refused_ones_count() -> None:
    run = contest.run_open(participant(), sample_of(1), "S")
    item = contest.run_next(run).item
    assert item is not None
    with pytest.raises(contest.RunRefused) as invalid:
        contest.run_submit(run, item.text_id, {"selections": [at("одеваем", "ИСП")]})
    assert invalid.value.status == 422
    assert invalid.value.extra["issues"][0]["kind"] == "correction_required"
    for _ in range(9):
        contest.run_submit(run, item.text_id, {"selections": GOOD})
    with pytest.raises(contest.RunRefused) as capped:
        contest.run_submit(run, item.text_id, {"selections": GOOD})
    assert capped.value.status == 429
    item.refresh_from_db()
    assert item.submissions == 10


def test_a_markup_of_another_text_is_ignored_and_a_late_one_annuls() -> None:
    sample = sample_of(2)
    run = contest.run_open(participant(), sample, "S")
    t0 = timezone.now()
    item = contest.run_next(run, now=t0).item
    assert item is not None
    unreleased = sample.entries.get(position=1).text_id
    with pytest.raises(contest.RunRefused) as ignored:
        contest.run_submit(run, unreleased, {"selections": GOOD}, now=t0)
    assert ignored.value.status == 409 and "ignored" in ignored.value.message
    assert not Markup.objects.exists() and run.items.count() == 1
    with pytest.raises(contest.RunRefused) as late:
        contest.run_submit(run, item.text_id, {"selections": GOOD}, now=t0 + timedelta(seconds=61))
    assert late.value.extra == {"annulled": True}
    item.refresh_from_db()
    assert item.annulled and item.markup is None
    with pytest.raises(contest.RunRefused):  # annulled stays annulled
        contest.run_submit(run, item.text_id, {"selections": GOOD}, now=t0 + timedelta(seconds=62))


def test_an_altered_text_and_a_malformed_markup_are_refused() -> None:
    run = contest.run_open(participant(), sample_of(1), "S")
    item = contest.run_next(run).item
    assert item is not None
    with pytest.raises(contest.RunRefused) as altered:
        contest.run_submit(run, item.text_id, {"selections": GOOD, "text": "другой текст"})
    assert (altered.value.status, altered.value.field) == (422, "text")
    with pytest.raises(contest.RunRefused) as malformed:
        contest.run_submit(run, item.text_id, {"selections": [{"startSelection": "x"}]})
    assert (malformed.value.status, malformed.value.field) == (400, "selections[0].startSelection")


@pytest.mark.parametrize(("late", "void"), [(1, False), (2, True)])
def test_more_than_five_percent_annulled_voids_the_run(late: int, void: bool) -> None:
    sample = sample_of(20)
    run = contest.run_open(participant(), sample, "S")
    t0 = timezone.now()
    for k in range(20):
        item = contest.run_next(run, now=t0).item
        assert item is not None
        if k >= late:
            contest.run_submit(run, item.text_id, {"selections": GOOD}, now=t0)
    report = contest.run_report(run, now=t0 + timedelta(minutes=5))
    assert report.annulled == late and report.annulled_share == late / 20
    assert report.void is void  # 1/20 = 5 % is not more than 5 %; 2/20 is


def test_unreleased_texts_annul_once_a_pull_run_is_closed() -> None:
    run = contest.run_open(participant(), sample_of(3), "S")
    item = contest.run_next(run).item
    assert item is not None
    contest.run_submit(run, item.text_id, {"selections": GOOD})
    assert contest.run_report(run).annulled == 0
    contest.run_close(run)
    report = contest.run_report(run)
    assert report.annulled == 2 and report.void
    with pytest.raises(contest.RunRefused) as closed:
        contest.run_next(run)
    assert closed.value.status == 409


def test_paced_release_counts_from_the_schedule() -> None:
    t0 = timezone.now().replace(microsecond=0)
    sample = sample_of(4, mode=SampleMode.PACED, interval_s=60, deadline_s=60, starts_at=t0)
    run = contest.run_open(participant(), sample, "S")
    before = contest.run_next(run, now=t0 - timedelta(seconds=5))
    assert before.item is None and before.next_at == t0
    now = t0 + timedelta(seconds=150)
    current = contest.run_next(run, now=now).item
    assert current is not None and current.position == 2
    assert current.released_at == t0 + timedelta(seconds=120)  # the schedule, not the request
    contest.run_submit(run, current.text_id, {"selections": GOOD}, now=now)
    waiting = contest.run_next(run, now=now)
    assert waiting.item is None and waiting.next_at == t0 + timedelta(seconds=180)
    report = contest.run_report(run, now=now)
    # Texts 0 and 1 opened and closed unanswered: annulled.
    assert report.released == 3 and report.annulled == 2 and report.answered == 1


def _expert_markup(text: MarkupText, fragments: list[Fragment], who: str) -> None:
    meta = default_meta()
    meta.update(subject="rus", expert=who)
    markup_store(MarkupDocument(text.text, fragments, meta), external_id=text.external_id)


def test_star_matches_an_independent_computation() -> None:
    sample = sample_of(2, hardness=0.25)
    texts = [e.text for e in sample.entries.order_by("position")]
    start = TEXT.find("одеваем")
    experts = {
        texts[0].pk: [
            [Fragment(start, start + 7, "Р.знач", correction="надеваем")],
            [Fragment(start, start + 7, "Р.оним", subtype="пар", correction="надеваем")],
        ],
        texts[1].pk: [[Fragment(0, 5, "Г.деепр")]],
    }
    for text in texts:
        for k, fragments in enumerate(experts[text.pk]):
            _expert_markup(text, fragments, f"E{k}")
    run = contest.run_open(participant(), sample, "S")
    answers = {texts[0].pk: GOOD, texts[1].pk: [at("Читая книгу", "Г.деепр")]}
    for _ in texts:
        item = contest.run_next(run).item
        assert item is not None
        contest.run_submit(run, item.text_id, {"selections": answers[item.text_id]})
    assert contest.run_report(run).star is None  # hidden while the run is open
    contest.run_close(run)
    report = contest.run_report(run)
    terms = []
    for text in texts:
        algorithm = [
            Fragment(
                s["startSelection"],
                s["endSelection"],
                s["type"],
                correction=s.get("correction", ""),
            )
            for s in answers[text.pk]
        ]
        values = [pair_accuracy(algorithm, e, text.text).value for e in experts[text.pk]]
        terms.append(0.25 * fmean(values) + 0.75 * max(values))
    assert report.scored == 2
    assert report.star == pytest.approx(fmean(terms))


def test_the_leaderboard_ranks_by_star_and_puts_void_runs_last() -> None:
    sample = sample_of(1)
    text = sample.entries.get().text
    _expert_markup(
        text,
        [Fragment(TEXT.find("одеваем"), TEXT.find("одеваем") + 7, "Р.знач", correction="надеваем")],
        "E",
    )
    good = contest.run_open(participant("good"), sample, "Good")
    poor = contest.run_open(participant("poor"), sample, "Poor")
    late = contest.run_open(participant("late"), sample, "Late")
    running = contest.run_open(participant("running"), sample, "Running")
    for run, selections in ((good, GOOD), (poor, [at("Читая", "Г.деепр")]), (running, GOOD)):
        item = contest.run_next(run).item
        assert item is not None
        contest.run_submit(run, item.text_id, {"selections": selections})
    for run in (good, poor, late):
        contest.run_close(run)
    rows = contest.leaderboard(sample)
    assert [(r.rank, r.report.run.system) for r in rows] == [
        (1, "Good"),
        (2, "Poor"),
        (None, "Late"),  # void: its one text never released
        (None, "Running"),  # open: not ranked, its score hidden
    ]
    assert rows[0].report.star == pytest.approx(100.0)
    assert rows[3].report.star is None


# --- the API and the pages ----------------------------------------------------------------------


def api(user: Any, *, token: bool = True) -> Client:
    if token:
        key = Token.objects.create(user=user).key
        return Client(HTTP_AUTHORIZATION=f"Token {key}")
    basic = base64.b64encode(f"{user.username}:{PASSWORD}".encode()).decode()
    return Client(HTTP_AUTHORIZATION=f"Basic {basic}")


def test_a_system_runs_a_session_over_the_api_with_a_token() -> None:
    sample = sample_of(1)
    team = participant()
    client = api(team.user)
    assert client.get(reverse("api_markup_samples")).json()[0]["id"] == sample.pk
    opened = client.post(
        reverse("api_markup_runs"),
        {"sample": sample.pk, "system": "Baseline"},
        content_type="application/json",
    )
    assert opened.status_code == 201
    run_id = opened.json()["id"]
    again = client.post(
        reverse("api_markup_runs"),
        {"sample": sample.pk, "system": "Twice"},
        content_type="application/json",
    )
    assert again.status_code == 409 and again.json()["run"] == run_id  # one run per sample
    got = client.post(reverse("api_markup_run_next", args=[run_id]))
    assert got.status_code == 200
    body = got.json()
    assert body["text"].startswith(TEXT) and body["meta"]["subject"] == "rus"
    sent = client.post(
        reverse("api_markup_run_markup", args=[run_id]),
        {"text_id": body["text_id"], "selections": GOOD},
        content_type="application/json",
    )
    assert sent.status_code == 200 and sent.json()["accepted"]
    wrong = client.post(
        reverse("api_markup_run_markup", args=[run_id]),
        {"text_id": "x", "selections": GOOD},
        content_type="application/json",
    )
    assert wrong.status_code == 400 and "text_id" in wrong.json()
    report = client.get(reverse("api_markup_run", args=[run_id])).json()
    assert report["answered"] == 1 and report["void"] is False
    assert "selections" not in str(report)  # scores only, never a markup
    assert client.post(reverse("api_markup_run_next", args=[run_id])).json()["done"] is True
    assert client.post(reverse("api_markup_run_close", args=[run_id])).json()["closed_at"]


def test_a_participant_sees_only_his_own_runs() -> None:
    sample = sample_of(1)
    mine = contest.run_open(participant("a"), sample, "A")
    other = participant("b")
    client = api(other.user, token=False)
    for name in (
        "api_markup_run",
        "api_markup_run_next",
        "api_markup_run_close",
        "api_markup_run_markup",
    ):
        method = client.get if name == "api_markup_run" else client.post
        assert method(reverse(name, args=[mine.pk])).status_code == 404
    assert client.get(reverse("api_markup_runs")).json() == []
    # Neither an unapproved participant nor an expert is a participant.
    pending = participant("pending", approved=False)
    assert api(pending.user).get(reverse("api_markup_runs")).status_code == 403
    expert = make_expert("markup_expert")
    assert api(expert.user).get(reverse("api_markup_samples")).status_code == 403
    # The pages: his own runs; the leaderboard without markups.
    web = Client()
    web.force_login(other.user)
    assert "run-" not in web.get(reverse("markup_my_runs")).content.decode()
    web.force_login(mine.participant.user)
    page = web.get(reverse("markup_my_runs")).content.decode()
    assert f'id="run-{mine.pk}"' in page
    board = web.get(reverse("markup_leaderboard"))
    assert board.status_code == 200 and "A" in board.content.decode()
    web.force_login(expert.user)
    assert web.get(reverse("markup_leaderboard")).status_code == 403
    assert MarkupRun.objects.count() == 1


def test_a_late_markup_after_one_in_time_leaves_that_one_standing() -> None:
    run = contest.run_open(participant(), sample_of(1), "S")
    t0 = timezone.now()
    item = contest.run_next(run, now=t0).item
    assert item is not None
    contest.run_submit(run, item.text_id, {"selections": GOOD}, now=t0 + timedelta(seconds=10))
    with pytest.raises(contest.RunRefused) as late:
        contest.run_submit(run, item.text_id, {"selections": []}, now=t0 + timedelta(seconds=90))
    assert late.value.status == 409 and "stands" in late.value.message
    item.refresh_from_db()
    assert not item.annulled and item.markup is not None
    assert item.markup.selections[0]["type"] == "Р.знач"


def test_an_earlier_submission_validated_last_does_not_replace_a_later_one() -> None:
    run = contest.run_open(participant(), sample_of(1), "S")
    item = contest.run_next(run).item
    assert item is not None
    contest.run_submit(run, item.text_id, {"selections": GOOD})
    # As if submission 3 had been stored while submission 2 (below) was still validating.
    MarkupRunItem.objects.filter(pk=item.pk).update(submissions=1, accepted_submission=3)
    contest.run_submit(run, item.text_id, {"selections": []})
    item.refresh_from_db()
    assert item.markup is not None and len(item.markup.selections) == 1


def test_names_and_strings_a_store_cannot_keep_are_refused() -> None:
    sample = sample_of(1)
    with pytest.raises(contest.RunRefused) as long_name:
        contest.run_open(participant("a"), sample, "x" * 101)
    assert long_name.value.status == 400
    run = contest.run_open(participant("b"), sample, "x" * 100)
    item = contest.run_next(run).item
    assert item is not None
    accepted = contest.run_submit(run, item.text_id, {"selections": GOOD})
    assert accepted.markup.author.startswith("x" * 100)
    for bad in ("a\x00b", "\ud800"):
        with pytest.raises(contest.RunRefused) as refused:
            contest.run_submit(
                run, item.text_id, {"selections": [at("одеваем", "Р.знач", comment=bad)]}
            )
        assert (refused.value.status, refused.value.field) == (400, "selections[0].comment")


def test_a_paced_session_opens_no_later_than_two_minutes_after_the_start() -> None:
    t0 = timezone.now()
    sample = sample_of(2, mode=SampleMode.PACED, starts_at=t0)
    contest.run_open(participant("early"), sample, "S", now=t0 + timedelta(seconds=119))
    with pytest.raises(contest.RunRefused) as late:
        contest.run_open(participant("late"), sample, "S", now=t0 + timedelta(seconds=121))
    assert late.value.status == 409


def test_the_api_turns_unreadable_bodies_into_400() -> None:
    sample = sample_of(1)
    team = participant()
    client = api(team.user)
    run = contest.run_open(team, sample, "S")
    url = reverse("api_markup_run_markup", args=[run.pk])
    for body in (b"[" * 100_000, b'{"text_id": ' + b"1" * 5000 + b"}"):
        assert client.post(url, body, content_type="application/json").status_code == 400


def test_a_closed_runs_scores_are_kept_until_an_expert_markup_changes() -> None:
    sample = sample_of(1)
    text = sample.entries.get().text
    start = TEXT.find("одеваем")
    _expert_markup(text, [Fragment(start, start + 7, "Р.знач", correction="надеваем")], "E1")
    run = contest.run_open(participant(), sample, "S")
    item = contest.run_next(run).item
    assert item is not None
    contest.run_submit(run, item.text_id, {"selections": GOOD})
    contest.run_close(run)
    assert contest.run_report(run).star == pytest.approx(100.0)
    run.refresh_from_db()
    kept = run.scores
    assert kept["terms"] == {str(text.pk): pytest.approx(100.0)}
    # Reused while nothing changed: a planted value comes back as it is.
    MarkupRun.objects.filter(pk=run.pk).update(
        scores={"version": kept["version"], "terms": {str(text.pk): 42.0}}
    )
    assert contest.run_report(run).star == pytest.approx(42.0)
    # A second expert markup changes the version: computed again (H = 0.5 over 100 and M(A, E2)).
    _expert_markup(text, [Fragment(0, 5, "Г.деепр")], "E2")
    report = contest.run_report(run)
    other = pair_accuracy(
        [Fragment(start, start + 7, "Р.знач", correction="надеваем")],
        [Fragment(0, 5, "Г.деепр")],
        text.text,
    ).value
    assert report.star == pytest.approx(0.5 * fmean([100.0, other]) + 0.5 * 100.0)
