"""Span markup as expert work (markup.work, markup.views_work): assignment of texts to a
panel's experts, drafts, submission with validation, the third expert on divergence, and who
may open whose markup."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from markup.models import Markup, MarkupRole, MarkupStatus, MarkupText
from markup.work import (
    MarkupRefused,
    independent_agreement,
    markup_assign,
    markup_save_draft,
    markup_submit,
    score_check,
)
from panels.models import Expert, Membership, Panel
from protocol.spans import pair_accuracy
from tests.conftest import PASSWORD, make_expert, make_user

pytestmark = pytest.mark.django_db

TEXT = "Читая книгу, снег падал. Мы одеваем шапки и идём гулять во двор."


def sel(quote: str, code: str, group: str = "error", **extra: Any) -> dict[str, Any]:
    start = TEXT.find(quote)
    assert start >= 0
    return {
        "startSelection": start,
        "endSelection": start + len(quote),
        "type": code,
        "group": group,
        **extra,
    }


@pytest.fixture
def panel(catalogue: None) -> Panel:
    return Panel.objects.get(key="editing")


@pytest.fixture
def experts(panel: Panel) -> list[Expert]:
    return [make_expert(f"marker{i}", panel) for i in range(4)]


@pytest.fixture
def text(db: Any) -> MarkupText:
    return MarkupText.objects.create(external_id="work-1", text=TEXT, subject="rus")


# Every criterion of a Russian essay scored, each with a rationale (required on submission).
SCORES = {f"К{n}": 1 for n in range(1, 13)}
RATIONALES = dict.fromkeys(SCORES, "обоснование")


def submit(markup: Markup, selections: list[dict[str, Any]], **extra: Any) -> Any:
    return markup_submit(markup, selections, criteria=SCORES, rationales=RATIONALES, **extra)


def login(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.username, password=PASSWORD)
    return client


def test_assign_gives_each_text_two_distinct_least_loaded_experts_and_reruns_add_nothing(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    other = MarkupText.objects.create(external_id="work-2", text=TEXT + " Ещё.", subject="rus")
    first = markup_assign(panel)
    assert (first.created, first.short) == (4, 0)
    for t in (text, other):
        drafts = list(t.markups.all())
        assert len(drafts) == 2
        assert len({m.expert_id for m in drafts}) == 2
        assert all(
            m.status == MarkupStatus.DRAFT and m.role == MarkupRole.INDEPENDENT for m in drafts
        )
    # Least-loaded first: four assignments over four experts, one each.
    loads = sorted(Markup.objects.values_list("expert_id", flat=True))
    assert loads == sorted(e.pk for e in experts)
    again = markup_assign(panel)
    assert again.created == 0 and Markup.objects.count() == 4


def test_assign_skips_paused_members_and_reports_the_shortfall(
    panel: Panel, text: MarkupText
) -> None:
    only = make_expert("lonely", panel)
    paused = make_expert("paused", panel)
    Membership.objects.filter(expert=paused).update(is_paused=True)
    result = markup_assign(panel, overlap=2)
    assert (result.created, result.short) == (1, 1)
    assert list(text.markups.values_list("expert_id", flat=True)) == [only.pk]


def test_assign_refuses_an_overlap_out_of_range(panel: Panel, text: MarkupText) -> None:
    with pytest.raises(MarkupRefused) as refused:
        markup_assign(panel, overlap=9)
    assert refused.value.field == "overlap"
    assert not Markup.objects.exists()


def test_a_draft_may_break_the_rules_but_not_the_format(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    markup = text.markups.first()
    assert markup is not None
    # Not yet a valid markup (ИСП without its correction) — a draft keeps it.
    saved = markup_save_draft(markup, [sel("одеваем", "ИСП")], time_ms=1200)
    assert saved.selections[0]["type"] == "ИСП" and saved.time_spent_ms == 1200
    with pytest.raises(MarkupRefused) as refused:
        markup_save_draft(markup, [{"startSelection": "a", "endSelection": 3, "type": "Р.знач"}])
    assert refused.value.field == "selections[0].startSelection"
    markup.refresh_from_db()
    assert markup.selections[0]["type"] == "ИСП"  # the refused draft changed nothing


def test_submission_is_validated_whole_and_nothing_is_stored_on_refusal(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    markup = text.markups.first()
    assert markup is not None
    crossing = [
        sel("Читая книгу, снег", "Г.деепр"),
        sel("снег падал. Мы", "Р.лишн"),
        sel("одеваем", "ИСП"),
    ]
    with pytest.raises(MarkupRefused) as refused:
        submit(markup, crossing, time_ms=10, key="k1")
    kinds = {issue.kind for issue in refused.value.issues}
    assert {"crossing", "correction_required"} <= kinds
    markup.refresh_from_db()
    assert markup.status == MarkupStatus.DRAFT and markup.selections == []


def test_submission_is_once_and_a_retry_with_its_key_is_recognised(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    markup = text.markups.first()
    assert markup is not None
    good = [sel("одеваем", "Р.знач", correction="надеваем")]
    first = submit(markup, good, time_ms=5000, key="k1")
    assert not first.repeated and first.markup.status == MarkupStatus.SUBMITTED
    assert first.markup.submitted_at is not None and first.markup.time_spent_ms == 5000
    assert submit(markup, good, key="k1").repeated
    with pytest.raises(MarkupRefused) as refused:
        submit(markup, [], key="k2")
    assert refused.value.field == "status"
    with pytest.raises(MarkupRefused):
        markup_save_draft(markup, [])
    markup.refresh_from_db()
    assert len(markup.selections) == 1


def test_a_third_expert_is_asked_only_when_the_two_independent_markups_diverge(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    one, two = text.markups.order_by("pk")
    same = [sel("Читая книгу, снег падал", "Г.деепр")]
    submit(one, same)
    assert independent_agreement(text) is None  # one markup is no agreement yet
    result = submit(two, [sel("одеваем", "Р.знач", correction="надеваем")])
    # Independent check of the agreement: the lower direction of M, computed here directly.
    from markup.services import markup_document

    one.refresh_from_db()
    two.refresh_from_db()
    x, y = markup_document(one).fragments, markup_document(two).fragments
    expected = min(pair_accuracy(x, y, TEXT).value, pair_accuracy(y, x, TEXT).value)
    assert independent_agreement(text) == pytest.approx(expected)
    assert expected < 50
    third = result.third
    assert third is not None and third.role == MarkupRole.THIRD
    assert third.expert_id not in {one.expert_id, two.expert_id}
    assert third.panel_id == panel.pk and third.status == MarkupStatus.DRAFT


def test_agreeing_markups_need_no_third(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    one, two = text.markups.order_by("pk")
    same = [sel("одеваем", "Р.знач", correction="надеваем")]
    submit(one, same)
    assert submit(two, same).third is None
    assert independent_agreement(text) == pytest.approx(100.0)
    assert not text.markups.filter(role=MarkupRole.THIRD).exists()


# --- the pages ---------------------------------------------------------------------------------


def test_the_expert_opens_saves_and_submits_his_markup_through_the_page(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    markup = text.markups.order_by("pk").first()
    assert markup is not None and markup.expert is not None
    client = login(markup.expert.user)
    queue = client.get(reverse("markup_work"))
    assert queue.status_code == 200
    assert reverse("markup_work_page", args=[markup.pk]) in queue.content.decode()
    page = client.get(reverse("markup_work_page", args=[markup.pk]))
    assert page.status_code == 200
    body = page.content.decode()
    found = re.search(r'<script id="markup-data" type="application/json">(.*?)</script>', body)
    assert found is not None
    data = json.loads(found.group(1))
    assert data["text"] == TEXT and data["editable"] is True
    codes = {entry["code"] for entry in data["classifier"]}
    assert "Г.деепр" in codes and "ИСП" in codes  # the subject's codes are offered
    draft = client.post(
        reverse("markup_work_draft", args=[markup.pk]),
        json.dumps({"selections": [sel("одеваем", "ИСП")], "time_ms": 300}),
        content_type="application/json",
    )
    assert draft.status_code == 200 and draft.json()["fragments"] == 1
    refused = client.post(
        reverse("markup_work_submit", args=[markup.pk]),
        json.dumps(
            {
                "selections": [sel("одеваем", "ИСП")],
                "key": "x",
                "criteria": SCORES,
                "rationales": RATIONALES,
            }
        ),
        content_type="application/json",
    )
    assert refused.status_code == 422
    assert refused.json()["issues"][0]["kind"] == "correction_required"
    assert refused.json()["issues"][0]["fragment"] == 0
    bad = client.post(
        reverse("markup_work_submit", args=[markup.pk]),
        b"{not json",
        content_type="application/json",
    )
    assert bad.status_code == 400 and bad.json()["field"] == "(body)"
    wrong_type = client.post(
        reverse("markup_work_submit", args=[markup.pk]),
        json.dumps({"selections": "nope"}),
        content_type="application/json",
    )
    assert wrong_type.status_code == 400 and wrong_type.json()["field"] == "selections"
    ok = client.post(
        reverse("markup_work_submit", args=[markup.pk]),
        json.dumps(
            {
                "selections": [sel("одеваем", "ИСП", correction="надеваем")],
                "key": "k",
                "criteria": SCORES,
                "rationales": RATIONALES,
            }
        ),
        content_type="application/json",
    )
    assert ok.status_code == 200 and ok.json()["submitted"]
    markup.refresh_from_db()
    assert markup.status == MarkupStatus.SUBMITTED
    again = client.post(
        reverse("markup_work_draft", args=[markup.pk]),
        json.dumps({"selections": []}),
        content_type="application/json",
    )
    assert again.status_code == 409


def test_an_expert_cannot_open_another_experts_markup_nor_a_paused_panels(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    mine, theirs = text.markups.order_by("pk")
    assert mine.expert is not None
    client = login(mine.expert.user)
    for name in ("markup_work_page",):
        assert client.get(reverse(name, args=[theirs.pk])).status_code == 404
    for name in ("markup_work_draft", "markup_work_submit"):
        response = client.post(
            reverse(name, args=[theirs.pk]),
            json.dumps({"selections": []}),
            content_type="application/json",
        )
        assert response.status_code == 404
    Membership.objects.filter(expert=mine.expert, panel=panel).update(is_paused=True)
    assert client.get(reverse("markup_work_page", args=[mine.pk])).status_code == 404
    # A user who is no expert has no markup work at all.
    outsider = login(make_user("outsider"))
    assert outsider.get(reverse("markup_work")).status_code == 403
    assert outsider.get(reverse("markup_work_page", args=[mine.pk])).status_code == 403


def test_the_third_expert_sees_both_earlier_markups_without_their_names(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    one, two = text.markups.order_by("pk")
    submit(one, [sel("Читая книгу, снег падал", "Г.деепр")])
    third = submit(two, [sel("одеваем", "Р.знач", correction="надеваем")]).third
    assert third is not None and third.expert is not None
    body = login(third.expert.user).get(reverse("markup_work_page", args=[third.pk]))
    html = body.content.decode()
    assert 'id="earlier-markups"' in html
    for earlier in (one, two):
        assert earlier.expert is not None
        assert earlier.expert.pseudonym not in html
        assert earlier.expert.user.username not in html
    # An independent expert's page shows no other markup.
    assert one.expert is not None
    html_one = login(one.expert.user).get(reverse("markup_work_page", args=[one.pk]))
    assert 'id="earlier-markups"' not in html_one.content.decode()


def test_only_the_panels_supervisor_or_an_admin_assigns(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    supervisor = make_user("editing_sup")
    panel.supervisors.add(supervisor)
    stranger = make_user("other_sup")
    Panel.objects.exclude(pk=panel.pk).first().supervisors.add(stranger)  # type: ignore[union-attr]
    data = {"panel": panel.pk, "overlap": 2}
    assert login(stranger).post(reverse("markup_assign"), data).status_code == 403
    assert not Markup.objects.exists()
    response = login(supervisor).post(reverse("markup_assign"), data)
    assert response.status_code == 302
    assert Markup.objects.filter(text=text).count() == 2
    page = login(supervisor).get(reverse("markup_texts"))
    assert 'id="markup-assign"' in page.content.decode()


# --- criterion scores beside the markup ---------------------------------------------------------


def test_submission_needs_every_criterion_in_range_with_a_rationale(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    markup = text.markups.first()
    assert markup is not None
    partial = {**SCORES, "К2": 7}
    del partial["К12"]
    notes = dict(RATIONALES)
    del notes["К3"]
    with pytest.raises(MarkupRefused) as refused:
        markup_submit(markup, [], criteria=partial, rationales=notes)
    messages = {(i.kind, i.message) for i in refused.value.issues}
    assert ("criterion_range", "К2: 7 is not 0…5") in messages
    assert ("criterion_missing", "К12: no score") in messages
    assert ("rationale_missing", "К3: no rationale") in messages
    assert refused.value.field == "criteria"
    with pytest.raises(MarkupRefused) as wrong:
        markup_submit(markup, [], criteria={"К99": 1}, rationales={})
    assert wrong.value.field == "criteria.К99" and not wrong.value.issues
    with pytest.raises(MarkupRefused) as typed:
        markup_save_draft(markup, [], criteria={"К1": "1"})
    assert typed.value.field == "criteria.К1"
    markup.refresh_from_db()
    assert markup.status == MarkupStatus.DRAFT and markup.criteria == {}


def test_scores_unlike_the_formula_are_accepted_and_flagged(
    panel: Panel, experts: list[Expert], catalogue: None
) -> None:
    # 80 words (short: −1) and two grammar errors: К9 = max(0, ⌊2 − 1 − 1⌋) = 0, К10 = ⌊1.5⌋ = 1.
    words = " ".join(["слово"] * 78)
    essay = MarkupText.objects.create(
        external_id="essay-80", text=f"Ошибка одна. {words}", subject="rus"
    )
    assert len(essay.text.split()) == 80
    markup_assign(panel, text_ids=[essay.pk])
    markup = essay.markups.first()
    assert markup is not None
    fragments = [
        {"startSelection": 0, "endSelection": 6, "type": "Г.согл", "group": "error"},
        {"startSelection": 7, "endSelection": 11, "type": "Г.упр", "group": "error"},
    ]
    scores = {**SCORES, "К9": 2, "К10": 1}
    result = markup_submit(markup, fragments, criteria=scores, rationales=RATIONALES)
    computed, differ = score_check(result.markup)
    assert computed is not None and computed.criteria == {"К9": 0, "К10": 1}
    assert differ == {"К9": 0}
    client = Client()
    client.force_login(make_user("staff", is_staff=True))
    page = client.get(reverse("markup_texts")).content.decode()
    assert "markup-score-flag" in page and "К9" in page


def test_the_regulations_score_conditions_also_call_a_third_expert(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    one, two = text.markups.order_by("pk")
    same = [sel("одеваем", "Р.знач", correction="надеваем")]
    markup_submit(one, same, criteria=SCORES, rationales=RATIONALES)
    # The same fragments (M = 100 %), but К7 two points apart: Appendix 3's condition.
    result = markup_submit(two, same, criteria={**SCORES, "К7": 3}, rationales=RATIONALES)
    assert independent_agreement(text) == pytest.approx(100.0)
    assert result.third is not None
    assert result.third.note == "К7 differs by 2 (≥ 2)"


def test_unreadable_or_unstorable_bodies_are_400_naming_the_field(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    markup = text.markups.order_by("pk").first()
    assert markup is not None and markup.expert is not None
    client = login(markup.expert.user)
    url = reverse("markup_work_draft", args=[markup.pk])
    deep = client.post(url, b"[" * 100_000, content_type="application/json")
    assert deep.status_code == 400 and deep.json()["field"] == "(body)"
    huge = client.post(url, b'{"time_ms": ' + b"1" * 5000 + b"}", content_type="application/json")
    assert huge.status_code == 400
    nul = client.post(
        url,
        json.dumps({"selections": [], "rationales": {"К1": "a\u0000b"}}),
        content_type="application/json",
    )
    assert nul.status_code == 400 and nul.json()["field"] == "rationales.К1"
    surrogate = client.post(
        url,
        '{"selections": [{"startSelection": 0, "endSelection": 5, "type": "Г.деепр", '
        '"group": "error", "comment": "\\ud800"}]}',
        content_type="application/json",
    )
    assert surrogate.status_code == 400 and surrogate.json()["field"] == "selections[0].comment"


def test_the_experts_queue_lists_his_markup_texts(
    panel: Panel, experts: list[Expert], text: MarkupText
) -> None:
    markup_assign(panel)
    one, two = text.markups.order_by("pk")
    assert one.expert is not None and two.expert is not None
    submit(one, [])
    page = login(one.expert.user).get(reverse("queue")).content.decode()
    assert "queue-section" in page and reverse("markup_work") in page
    assert 'data-count="section-open">0<' in page  # his one text is done
    other = login(two.expert.user).get(reverse("queue")).content.decode()
    assert 'data-count="section-open">1<' in other
    # An expert without markup work sees no such section.
    lonely = make_expert("lonely_expert", panel)
    assert "queue-section" not in login(lonely.user).get(reverse("queue")).content.decode()


def test_the_texts_page_is_paginated(catalogue: None) -> None:
    for k in range(25):
        MarkupText.objects.create(external_id=f"page-{k:02d}", text=f"Текст {k}.", subject="rus")
    client = Client()
    client.force_login(make_user("staff_pages", is_staff=True))
    first = client.get(reverse("markup_texts")).content.decode()
    assert "page-00" in first and "page-19" in first and "page-20" not in first
    assert 'id="markup-pages"' in first
    second = client.get(reverse("markup_texts"), {"page": 2}).content.decode()
    assert "page-20" in second and "page-24" in second and "page-00" not in second
    # A page number out of range or malformed shows a page, never an error.
    assert client.get(reverse("markup_texts"), {"page": "x"}).status_code == 200
    assert client.get(reverse("markup_texts"), {"page": 999}).status_code == 200
