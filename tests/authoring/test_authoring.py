"""Instruction writing: quotas and their uniform spread, slot allocation, the review state
machine (no skipped state, revisions kept), double review and reviewer agreement, the
editorial step, the originality check on planted near-duplicates, acceptance into the
material, the export, the human baseline, and who sees what."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

import openpyxl
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from authoring import baseline, corpora, exports, selectors, services
from authoring.models import Campaign, OriginalityCheck, ReferenceCorpus, Revision, Slot, SlotState
from jobs.models import JobStatus
from lib.neardup import normalize_words
from material.models import Answer, Instruction
from panels.models import Membership, Panel
from protocol import authoring as rules
from taxonomy.models import Task
from tests.conftest import PASSWORD, Personas, make_expert
from work.assignments import assignments_build, triples_build
from work.models import Assignment

pytestmark = pytest.mark.django_db

TEXT = (
    "Напишите научно-популярную статью о том, как перелётные птицы находят дорогу домой: "
    "расскажите о магнитном компасе, звёздной навигации и памяти о ландшафтах, приведите "
    "два примера исследований и объясните, почему молодые птицы иногда сбиваются с пути."
)

# POLLUX §3.2: 50 instructions per task group, 10/15/25 by level; footnote 9: STEM and the three
# code groups 125 (code 8/9/8 per language × 5, so 40/45/40; STEM given the same, see
# protocol.authoring). Written out here so the plan is checked against the paper, not itself.
PAPER_GROUP = {"easy": 10, "medium": 15, "hard": 25}
PAPER_LARGE = {"easy": 40, "medium": 45, "hard": 40}
PAPER_LARGE_GROUPS = {"STEM exercises", "Code creation", "Code analysis", "Code modification"}
# Extract's five subtypes get 10/15/25 spread uniformly: 2/3/5 each; each owner has one.
EXTRACT_SHARE = {"easy": 2, "medium": 3, "hard": 5}


# --- the pure rules -----------------------------------------------------------------------------


def test_spread_is_uniform_at_every_level_of_the_tree() -> None:
    # A group with a leaf and a subtype of three leaves: each child of the group gets half,
    # then the subtype's half is split over its three leaves (not 1/4 each over the leaves).
    tree = rules.Node("g", (rules.Node("a"), rules.Node("s", tuple(rules.Node(k) for k in "xyz"))))
    assert rules.spread(tree, 25) == {"a": 13, "x": 4, "y": 4, "z": 4}
    assert sum(rules.spread(tree, 10).values()) == 10
    assert rules.split_even(10, 3) == [4, 3, 3]
    assert rules.spread(rules.Node("leaf"), 7) == {"leaf": 7}


def test_default_quotas_follow_pollux() -> None:
    assert rules.default_quota("Editing") == {"easy": 10, "medium": 15, "hard": 25}
    for group in ("STEM exercises", "Code creation", "Code analysis", "Code modification"):
        assert sum(rules.default_quota(group).values()) == 125


def test_state_machine_has_no_other_moves() -> None:
    moves = {(s, a) for s in rules.STATES for a in rules.ACTIONS}
    for state, action in moves:
        if (state, action) in rules.TRANSITIONS:
            assert rules.next_state(state, action) == rules.TRANSITIONS[(state, action)]
        else:
            with pytest.raises(rules.TransitionError):
                rules.next_state(state, action)
    # Accepted only through the editorial step and the originality check.
    assert rules.TRANSITIONS[(rules.SUBMITTED, "accept")] == rules.EDITING
    assert rules.TRANSITIONS[(rules.EDITING, "proofread")] == rules.ORIGINALITY


def test_review_agreement_matches_a_hand_computation() -> None:
    pairs = [("accept", "accept")] * 6 + [("return", "return")] * 2 + [("accept", "return")] * 2
    out = rules.review_agreement(pairs)
    # po = 0.8; p1(accept) = 0.8, p2(accept) = 0.6; pe = 0.8*0.6 + 0.2*0.4 = 0.56
    assert out["agreement"] == pytest.approx(0.8)
    assert out["kappa"] == pytest.approx((0.8 - 0.56) / (1 - 0.56))
    assert rules.review_agreement([("accept", "accept")])["kappa"] is None


def test_draft_errors_name_the_field() -> None:
    assert rules.draft_errors({"text": "x" * (rules.MAX_TEXT_CHARS + 1)}, submitting=False) == {
        "text": f"is {rules.MAX_TEXT_CHARS + 1:,} characters long; at most {rules.MAX_TEXT_CHARS:,}"
    }
    assert "style" in rules.draft_errors({"text": "a"}, submitting=True)
    assert "devices" in rules.draft_errors({"devices": {"metaphor": 0}}, submitting=False)
    assert "devices" in rules.draft_errors({"devices": {"nonsense": 1}}, submitting=False)
    assert rules.draft_errors({"text": "", "devices": {"metaphor": 2}}, submitting=False) == {}


# --- campaigns, plans, slots --------------------------------------------------------------------


@pytest.fixture
def team(personas: Personas) -> dict[str, Any]:
    panel = personas.panel_a  # science: owns "Scientific text", "STEM exercises"...
    author = personas.expert_a
    Membership.objects.filter(expert=author, panel=panel).update(can_author=True)
    reviewer = make_expert("reviewer_a", panel)
    reviewer2 = make_expert("reviewer_a2", panel)
    editor = make_expert("editor_a", panel)
    Membership.objects.filter(expert__in=[reviewer, reviewer2], panel=panel).update(can_review=True)
    Membership.objects.filter(expert=editor, panel=panel).update(can_edit=True)
    other_author = make_expert("author_b", personas.panel_b)
    Membership.objects.filter(expert=other_author).update(can_author=True)
    campaign = services.campaign_create(
        name="POLLUX-2", user=personas.admin, double_review_share=0.0
    )
    group = panel.tasks.filter(level=0).order_by("position").first()
    assert group is not None
    return {
        "panel": panel,
        "author": author,
        "reviewer": reviewer,
        "reviewer2": reviewer2,
        "editor": editor,
        "other_author": other_author,
        "campaign": campaign,
        "group": group,
        "personas": personas,
    }


def _leaves(group: Task) -> list[Task]:
    return [
        t
        for t in Task.objects.filter(is_leaf=True)
        if t.path == group.path or t.path.startswith(group.path + " / ")
    ]


def _default_share(panel: Panel, group: Task) -> tuple[dict[str, int], set[int]]:
    """The default counts of `panel` in `group` and the leaves they cover: the whole group for
    its only owner; of Extract (five owners), the subtype of the panel's functional style."""
    if Panel.objects.filter(tasks=group).count() == 1:
        return rules.default_quota(group.name_en), {t.pk for t in _leaves(group)}
    assert group.name_en == "Extract"
    own = Task.objects.get(parent=group, style__in=panel.styles.all())
    return EXTRACT_SHARE, {own.pk}


def _own_leaf(team: dict[str, Any]) -> Task:
    """A leaf of the team's group that the team's panel writes (has a quota for)."""
    plan = services.current_plan(team["campaign"])
    assert plan is not None
    quota = plan.quotas.filter(panel=team["panel"], group=team["group"], count__gt=0).first()
    assert quota is not None
    return quota.task


def test_default_plan_covers_every_owned_group_and_spreads_to_leaves(team: dict[str, Any]) -> None:
    campaign, panel = team["campaign"], team["panel"]
    plan = services.current_plan(campaign)
    assert plan is not None and plan.number == 1
    entries = services.plan_entries(plan)
    owned = list(panel.tasks.filter(level=0))
    for group in owned:
        expected, leaves = _default_share(panel, group)
        assert entries[(panel.pk, group.pk)] == expected, group.name_en
        per_leaf = {
            q.task_id: q.count
            for q in plan.quotas.filter(panel=panel, group=group, complexity="hard")
        }
        assert set(per_leaf) == leaves
        assert sum(per_leaf.values()) == expected["hard"]
    # Every panel's groups: 35 task groups in all, as POLLUX.
    assert len(entries) == sum(p.tasks.filter(level=0).count() for p in Panel.objects.all())


def test_plan_edit_is_a_new_version_and_checks_values(team: dict[str, Any]) -> None:
    campaign, panel, group = team["campaign"], team["panel"], team["group"]
    admin = team["personas"].admin
    v2 = services.plan_save(
        campaign=campaign,
        entries={(panel.pk, group.pk): {"easy": 1, "medium": 0, "hard": 2}},
        user=admin,
    )
    assert v2.number == 2
    assert services.plan_entries(v2)[(panel.pk, group.pk)] == {"easy": 1, "medium": 0, "hard": 2}
    # The first version is untouched.
    v1 = campaign.plans.get(number=1)
    assert services.plan_entries(v1)[(panel.pk, group.pk)] == _default_share(panel, group)[0]
    with pytest.raises(services.AuthoringError) as bad:
        services.plan_save(
            campaign=campaign, entries={(panel.pk, group.pk): {"easy": -1}}, user=admin
        )
    assert bad.value.field == f"quota-{panel.pk}-{group.pk}-easy"
    other = Task.objects.filter(level=0).exclude(panels=panel).first()
    assert other is not None
    with pytest.raises(services.AuthoringError):  # a group the panel does not own
        services.plan_save(campaign=campaign, entries={(panel.pk, other.pk): {"easy": 1}})
    assert campaign.plans.count() == 2


def test_slots_are_taken_up_to_the_quota_and_only_by_authors(team: dict[str, Any]) -> None:
    campaign, panel, group, author = team["campaign"], team["panel"], team["group"], team["author"]
    services.plan_save(
        campaign=campaign, entries={(panel.pk, group.pk): {"easy": 2, "medium": 0, "hard": 0}}
    )
    open_ = [o for o in services.open_slots(campaign, author) if o.task.path.startswith(group.path)]
    easy = [o for o in open_ if o.complexity == "easy"]
    assert sum(o.left for o in easy) == 2
    task = easy[0].task
    slot = services.slot_take(
        campaign=campaign, expert=author, panel=panel, task=task, complexity="easy"
    )
    assert slot.state == SlotState.DRAFT and slot.author == author
    if easy[0].quota == 1:
        with pytest.raises(services.AuthoringError) as full:
            services.slot_take(
                campaign=campaign, expert=author, panel=panel, task=task, complexity="easy"
            )
        assert full.value.status == 409
    with pytest.raises(services.AuthoringError) as no_role:
        services.slot_take(
            campaign=campaign, expert=team["reviewer"], panel=panel, task=task, complexity="easy"
        )
    assert no_role.value.status == 403


def _slot(team: dict[str, Any], text: str = TEXT) -> Slot:
    campaign, panel = team["campaign"], team["panel"]
    task = _own_leaf(team)
    slot = services.slot_take(
        campaign=campaign, expert=team["author"], panel=panel, task=task, complexity="hard"
    )
    services.draft_save(
        slot=slot,
        values={"text": text, "style": task.style_id or 1, "devices": {"metaphor": 2}},
        user=team["author"].user,
    )
    return Slot.objects.get(pk=slot.pk)


def test_the_review_cycle_keeps_revisions_and_skips_nothing(
    team: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    slot = _slot(team)
    author, reviewer, editor = team["author"], team["reviewer"], team["editor"]
    sup = team["personas"].supervisor_a
    # Nothing can be reviewed, edited or judged before it is submitted.
    with pytest.raises(services.AuthoringError):
        services.review_submit(
            slot=slot, reviewer=reviewer, verdict="accept", comment="", user=reviewer.user
        )
    with pytest.raises(services.AuthoringError):
        services.editor_save(slot=slot, text="x", reference_answer="", note="", user=editor.user)
    services.slot_submit(slot=slot, values=None, user=author.user)
    # The author cannot review his own, nor change it while in review.
    with pytest.raises(services.AuthoringError) as own:
        services.review_submit(
            slot=slot, reviewer=author, verdict="accept", comment="", user=author.user
        )
    assert own.value.status == 403
    with pytest.raises(services.AuthoringError):
        services.draft_save(slot=slot, values={"text": "changed"}, user=author.user)
    # A return needs a comment.
    with pytest.raises(services.AuthoringError) as bare:
        services.review_submit(
            slot=slot, reviewer=reviewer, verdict="return", comment=" ", user=reviewer.user
        )
    assert bare.value.field == "comment"
    services.review_submit(
        slot=slot,
        reviewer=reviewer,
        verdict="return",
        comment="Уровень сложности не соответствует: добавьте условие.",
        user=reviewer.user,
    )
    slot.refresh_from_db()
    assert slot.state == SlotState.RETURNED
    services.draft_save(
        slot=slot,
        values={"text": TEXT + " Добавьте таблицу.", "style": slot.style_id},
        user=author.user,
    )
    services.slot_submit(slot=slot, values=None, user=author.user)
    slot.refresh_from_db()
    assert slot.round == 2 and slot.state == SlotState.SUBMITTED
    services.review_submit(
        slot=slot, reviewer=reviewer, verdict="accept", comment="", user=reviewer.user
    )
    slot.refresh_from_db()
    assert slot.state == SlotState.EDITING
    services.editor_save(
        slot=slot,
        text=slot.text.replace("Добавьте", "Добавьте, пожалуйста,"),
        reference_answer="",
        note="запятые",
        user=editor.user,
    )
    with django_capture_on_commit_callbacks(execute=True):
        check = services.editor_done(slot=slot, user=editor.user)
    check.refresh_from_db()
    assert check.checked_at is not None and check.job is not None
    assert check.job.status == JobStatus.DONE
    revisions = list(slot.revisions.order_by("number").values_list("kind", "text"))
    assert [k for k, _ in revisions] == ["submission", "submission", "edit"]
    assert revisions[0][1] == TEXT and "пожалуйста" in revisions[2][1]
    services.originality_verdict(slot=slot, verdict="original", comment="", user=sup)
    slot.refresh_from_db()
    assert slot.state == SlotState.ACCEPTED
    instruction = slot.instruction
    assert instruction is not None
    assert instruction.text == slot.text and instruction.author == author.pseudonym
    assert instruction.task_id == slot.task_id and instruction.complexity == "hard"
    assert [e.action for e in slot.events.order_by("at", "pk")] == [
        "take",
        "submit",
        "return",
        "submit",
        "accept",
        "proofread",
        "original",
    ]
    returns = selectors.return_rate(team["campaign"], team["personas"].admin)
    assert returns == {"decided": 1, "returned": 1, "rate": 1.0}
    # Accepted is final.
    with pytest.raises(services.AuthoringError):
        services.originality_verdict(slot=slot, verdict="original", comment="", user=sup)


def test_double_review_needs_both_and_feeds_agreement(team: dict[str, Any]) -> None:
    Campaign.objects.filter(pk=team["campaign"].pk).update(double_review_share=1.0)
    team["campaign"].refresh_from_db()
    slot = _slot(team)
    services.slot_submit(slot=slot, values=None, user=team["author"].user)
    slot.refresh_from_db()
    assert slot.double_review
    r1, r2 = team["reviewer"], team["reviewer2"]
    services.review_submit(slot=slot, reviewer=r1, verdict="accept", comment="", user=r1.user)
    slot.refresh_from_db()
    assert slot.state == SlotState.SUBMITTED  # waits for the second reviewer
    with pytest.raises(services.AuthoringError):  # once per round
        services.review_submit(slot=slot, reviewer=r1, verdict="accept", comment="", user=r1.user)
    services.review_submit(slot=slot, reviewer=r2, verdict="return", comment="нет", user=r2.user)
    slot.refresh_from_db()
    assert slot.state == SlotState.RETURNED  # one return is enough
    agreement = selectors.reviewer_agreement(team["campaign"], team["personas"].admin)
    assert agreement["pairs"] == 1 and agreement["agreement"] == 0.0


def _to_originality(team: dict[str, Any], text: str, capture: Any) -> tuple[Slot, OriginalityCheck]:
    slot = _slot(team, text)
    services.slot_submit(slot=slot, values=None, user=team["author"].user)
    r = team["reviewer"]
    services.review_submit(slot=slot, reviewer=r, verdict="accept", comment="", user=r.user)
    with capture(execute=True):
        check = services.editor_done(slot=slot, user=team["editor"].user)
    check.refresh_from_db()
    return Slot.objects.get(pk=slot.pk), check


def test_originality_finds_planted_near_duplicates(
    team: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    source = (
        "Объясните школьнику, почему небо голубое, а закат красный: расскажите о рассеянии "
        "Рэлея, о длине волны синего и красного света, о толще атмосферы на закате и о том, "
        "почему облака белые. Приведите простой опыт со стаканом воды и молоком."
    )
    original = Instruction.objects.create(text=source, external_id="existing-1")
    Instruction.objects.create(text="Совсем другой текст про рецепт борща и свёклу.")
    # The planted copy: a few words changed.
    copy = source.replace("школьнику", "ребёнку").replace("простой", "домашний")
    slot, check = _to_originality(team, copy, django_capture_on_commit_callbacks)
    assert check.matches, "the near-duplicate was not found"
    top = check.matches[0]
    assert (top["source"], top["id"]) == ("instruction", original.pk)

    def shingles(t: str) -> set[tuple[str, ...]]:
        w = normalize_words(t)
        return {tuple(w[i : i + 5]) for i in range(len(w) - 4)}

    a, b = shingles(copy), shingles(source)
    assert top["similarity"] == pytest.approx(len(a & b) / len(a | b), abs=1e-4)
    assert check.compared >= 2
    # Not original: back to the author with the comment.
    sup = team["personas"].supervisor_a
    with pytest.raises(services.AuthoringError) as bare:
        services.originality_verdict(slot=slot, verdict="not_original", comment="", user=sup)
    assert bare.value.field == "comment"
    services.originality_verdict(
        slot=slot, verdict="not_original", comment="Копия existing-1", user=sup
    )
    slot.refresh_from_db()
    assert slot.state == SlotState.RETURNED and slot.instruction_id is None


def test_an_original_text_has_no_close_match_and_reference_corpora_count(
    team: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    upload = SimpleUploadedFile(
        "corpus.jsonl",
        (
            json.dumps({"id": "r1", "text": TEXT.replace("птицы", "бабочки")}, ensure_ascii=False)
            + "\n"
        ).encode(),
    )
    corpora.corpus_from_upload(name="Интернет", upload=upload, user=team["personas"].admin)
    _slot1, check = _to_originality(team, TEXT, django_capture_on_commit_callbacks)
    assert check.matches and check.matches[0]["source"] == "reference"
    _slot2, check2 = _to_originality(
        team,
        "Составьте задачу по стереометрии о правильной пирамиде с квадратным основанием, "
        "где нужно найти угол между боковой гранью и плоскостью основания по известной высоте.",
        django_capture_on_commit_callbacks,
    )
    assert all(m["similarity"] < 0.3 for m in check2.matches)


def test_corpus_upload_names_the_bad_row(team: dict[str, Any]) -> None:
    upload = SimpleUploadedFile("c.csv", b"id,text\n1,good text here\n2,\n")
    with pytest.raises(services.AuthoringError) as bad:
        corpora.corpus_from_upload(name="x", upload=upload, user=team["personas"].admin)
    assert bad.value.status == 422 and "row 3, text" in str(bad.value)
    assert not ReferenceCorpus.objects.filter(name="x").exists()


def test_export_uses_pollux_columns_and_neutralises_formulas(
    team: dict[str, Any], django_capture_on_commit_callbacks: Any
) -> None:
    slot, _check = _to_originality(
        team, '=HYPERLINK("http://x") ' + TEXT, django_capture_on_commit_callbacks
    )
    services.originality_verdict(
        slot=slot, verdict="original", comment="", user=team["personas"].supervisor_a
    )
    admin = team["personas"].admin
    rows = exports.instruction_rows(team["campaign"], admin)
    assert len(rows) == 1
    row = rows[0]
    for column in (
        "instruction",
        "task_type",
        "task_subtype",
        "difficulty",
        "domain",
        "is_provocative",
        "reference_answer",
    ):
        assert column in row
    assert row["difficulty"] == "hard" and row["stylistic_devices"] == "metaphor: 2"
    body, _ = exports.instructions_file(team["campaign"], admin, "xlsx")
    sheet = openpyxl.load_workbook(io.BytesIO(body))["instructions"]
    header = [c.value for c in sheet[1]]
    cell = sheet.cell(row=2, column=header.index("instruction") + 1)
    assert cell.data_type == "s" and str(cell.value).startswith("=HYPERLINK")
    # The supervisor of another panel exports nothing of this panel.
    assert exports.instruction_rows(team["campaign"], team["personas"].supervisor_b) == []


# --- the human baseline -------------------------------------------------------------------------


def test_baseline_answers_are_never_scored_by_their_author(
    team: dict[str, Any], make_answer: Callable[..., Answer]
) -> None:
    panel, author = team["panel"], team["author"]
    existing = make_answer(task="Original Text Generation / Scientific text / Academic text")
    assert existing.instruction.task is not None
    made = baseline.baseline_sample(panel=panel, size=1, user=team["personas"].supervisor_a)
    assert len(made) == 1 and made[0].expert == author
    item = made[0]
    with pytest.raises(services.AuthoringError) as empty:
        baseline.baseline_save(item=item, text=" ", submit=True, user=author.user)
    assert empty.value.field == "text"
    item = baseline.baseline_save(
        item=item, text="Мой ответ эксперта: аннотация.", submit=True, user=author.user
    )
    answer = item.answer
    assert answer is not None and answer.model.name == baseline.HUMAN_MODEL[0]
    assert answer.generation_meta["author"] == author.pseudonym
    # The author qualifies for the panel's work; the builder still gives him none on it.
    Membership.objects.filter(expert=author, panel=panel).update(qualified=True)
    triples_build(answer_ids=[answer.pk])
    assignments_build(answer_ids=[answer.pk])
    on_answer = Assignment.objects.filter(answer=answer)
    assert on_answer.exists(), "other experts get the human answer"
    assert not on_answer.filter(expert=author).exists()


# --- who sees what -----------------------------------------------------------------------------


def _client(user: Any) -> Client:
    client = Client()
    assert client.login(username=user.get_username(), password=PASSWORD)
    return client


def test_authors_see_only_their_drafts_and_reviewers_only_their_panel(
    team: dict[str, Any],
) -> None:
    slot = _slot(team)
    url = reverse("authoring_slot", args=[slot.pk])
    assert _client(team["author"].user).get(url).status_code == 200
    # Another author, the panel's reviewer before submission, an expert of another panel.
    assert _client(team["other_author"].user).get(url).status_code == 404
    assert _client(team["reviewer"].user).get(url).status_code == 404
    services.slot_submit(slot=slot, values=None, user=team["author"].user)
    page = _client(team["reviewer"].user).get(url)
    assert page.status_code == 200 and team["author"].pseudonym not in page.content.decode()
    assert _client(team["other_author"].user).get(url).status_code == 404
    assert _client(team["editor"].user).get(url).status_code == 404  # not accepted yet
    assert _client(team["personas"].supervisor_a).get(url).status_code == 200
    assert _client(team["personas"].supervisor_b).get(url).status_code == 404
    # Autosave by someone else: refused; by the author while in review: 409 naming why.
    save = reverse("authoring_save", args=[slot.pk])
    assert _client(team["other_author"].user).post(save, {"text": "x"}).status_code == 404
    answer = _client(team["author"].user).post(save, {"text": "x"})
    assert answer.status_code == 409 and "cannot change" in answer.json()["errors"]["__all__"]
    # A forged verdict is a 400 naming the field.
    bad = _client(team["reviewer"].user).post(
        reverse("authoring_review", args=[slot.pk]), {"verdict": "maybe"}
    )
    assert bad.status_code == 400 and b"verdict" in bad.content


def test_autosave_by_the_page_bounds_time_and_reports_field_errors(team: dict[str, Any]) -> None:
    slot = _slot(team)
    client = _client(team["author"].user)
    save = reverse("authoring_save", args=[slot.pk])
    ok = client.post(save, {"text": "Новый черновик", "seconds": "100000", "device-epithet": "3"})
    assert ok.status_code == 200 and ok.json()["ok"]
    slot.refresh_from_db()
    assert slot.text == "Новый черновик" and slot.devices == {"epithet": 3}
    # A forged figure cannot add more than the time since the last save.
    assert slot.seconds_spent <= services.MAX_SECONDS_PER_SAVE + 10
    bad = client.post(save, {"text": "a", "device-epithet": "много"})
    assert bad.status_code == 422 and "devices" in bad.json()["errors"]
    nan = client.post(save, {"text": "a", "seconds": "nan"})
    assert nan.status_code == 422 and "seconds" in nan.json()["errors"]
    json_save = client.post(
        save,
        data=json.dumps({"text": "JSON", "devices": {"irony": 1}}),
        content_type="application/json",
    )
    assert json_save.status_code == 200
    slot.refresh_from_db()
    assert slot.devices == {"irony": 1}
    # Submitting without a style names the field, stores nothing new.
    Slot.objects.filter(pk=slot.pk).update(style=None)
    refused = client.post(reverse("authoring_submit", args=[slot.pk]), {"text": "JSON"})
    assert refused.status_code == 422 and b"style" in refused.content
    assert not Revision.objects.filter(slot=slot).exists()


def test_dashboard_counts_against_quota(team: dict[str, Any]) -> None:
    slot = _slot(team)
    services.slot_submit(slot=slot, values=None, user=team["author"].user)
    rows = selectors.dashboard(team["campaign"], team["personas"].supervisor_a)
    assert rows and all(r.panel == team["panel"] for r in rows)
    row = next(r for r in rows if r.group == team["group"])
    assert row.levels["hard"].in_review == 1
    assert row.total.quota == sum(_default_share(team["panel"], team["group"])[0].values())
    page = _client(team["personas"].supervisor_a).get(
        reverse("authoring_dashboard", args=[team["campaign"].pk])
    )
    assert page.status_code == 200 and b"dashboard" in page.content
    # Experts do not see the dashboard.
    assert (
        _client(team["author"].user)
        .get(reverse("authoring_dashboard", args=[team["campaign"].pk]))
        .status_code
        == 403
    )


def test_a_baseline_author_never_compares_a_pair_with_his_answer(
    team: dict[str, Any], make_answer: Callable[..., Answer]
) -> None:
    from material.models import AnswerPair
    from work.comparisons import comparisons_build

    panel, author = team["panel"], team["author"]
    machine = make_answer(task="Original Text Generation / Scientific text / Academic text")
    [item] = baseline.baseline_sample(panel=panel, size=1, user=team["personas"].admin)
    assert item.instruction_id == machine.instruction_id
    item = baseline.baseline_save(item=item, text="Ответ эксперта.", submit=True, user=author.user)
    assert item.answer is not None
    pair = AnswerPair.objects.create(
        instruction=machine.instruction, answer_a=machine, answer_b=item.answer
    )
    Membership.objects.filter(panel=panel).update(qualified=True)
    comparisons_build(panel_id=panel.pk, route=True, pair_ids=[pair.pk], overlap=3, seed=1)
    holders = set(Assignment.objects.filter(pair=pair).values_list("expert_id", flat=True))
    assert holders, "other experts compare the pair"
    assert author.pk not in holders


# --- the default plan against the paper (issue #28, item 15) -----------------------------------


def _group_totals(campaign: Campaign) -> dict[str, dict[str, int]]:
    plan = services.current_plan(campaign)
    assert plan is not None
    totals: dict[str, dict[str, int]] = {}
    for q in plan.quotas.select_related("group"):
        by_level = totals.setdefault(q.group.name_en, dict.fromkeys(rules.COMPLEXITIES, 0))
        by_level[q.complexity] += q.count
    return totals


def test_default_plan_totals_match_the_paper(catalogue: None) -> None:
    campaign = services.campaign_create(name="POLLUX totals")
    totals = _group_totals(campaign)
    assert len(totals) == 35
    for name, by_level in totals.items():
        expected = PAPER_LARGE if name in PAPER_LARGE_GROUPS else PAPER_GROUP
        assert by_level == expected, name
    # 31 groups × 50 + 4 × 125. The paper's headline says 2,100; its per-group figures add up
    # to 2,050 (see docs/authoring.md), and the plan follows the per-group figures.
    assert sum(sum(v.values()) for v in totals.values()) == 31 * 50 + 4 * 125 == 2_050


def test_a_group_with_several_owners_is_split_by_subtype(catalogue: None) -> None:
    campaign = services.campaign_create(name="POLLUX owners")
    plan = services.current_plan(campaign)
    assert plan is not None
    extract = Task.objects.get(level=0, name_en="Extract")
    rows = plan.quotas.filter(group=extract).select_related("panel", "task")
    owned = {(q.panel.key, q.task.name_en) for q in rows}
    # Each owner gets the subtype of its functional style; Editing (no style) the general one.
    assert owned == {
        ("science", "Scientific text"),
        ("literature", "Literary text"),
        ("journalism", "Journalistic text"),
        ("law", "Official text"),
        ("editing", "General-purpose"),
    }
    entries = services.plan_entries(plan)
    for panel in Panel.objects.filter(tasks=extract):
        assert entries[(panel.pk, extract.pk)] == EXTRACT_SHARE, panel.key
    # Science in particular writes no literary-text Extract instructions.
    science = Panel.objects.get(key="science")
    assert not plan.quotas.filter(panel=science, group=extract, task__name_en="Literary text")


def test_a_campaign_of_one_panel_plans_only_its_subtypes(catalogue: None) -> None:
    editing = Panel.objects.get(key="editing")
    campaign = services.campaign_create(name="Editing only", panels=[editing])
    extract = Task.objects.get(level=0, name_en="Extract")
    plan = services.current_plan(campaign)
    assert plan is not None
    assert services.plan_entries(plan)[(editing.pk, extract.pk)] == EXTRACT_SHARE
    assert {q.task.name_en for q in plan.quotas.filter(group=extract)} == {"General-purpose"}


def test_editing_a_shared_group_spreads_over_the_panels_own_subtypes(personas: Personas) -> None:
    science = personas.panel_a
    extract = Task.objects.get(level=0, name_en="Extract")
    campaign = services.campaign_create(name="Edited")
    v2 = services.plan_save(
        campaign=campaign, entries={(science.pk, extract.pk): {"easy": 7, "medium": 0, "hard": 1}}
    )
    rows = {
        (q.task.name_en, q.complexity): q.count
        for q in v2.quotas.filter(panel=science, group=extract).select_related("task")
    }
    assert rows == {
        ("Scientific text", "easy"): 7,
        ("Scientific text", "medium"): 0,
        ("Scientific text", "hard"): 1,
    }
    # The other owners keep their shares: the group is 7 + 4 × 2 easy.
    assert _group_totals(campaign)["Extract"] == {"easy": 15, "medium": 12, "hard": 21}
    # An owner of the group that owns none of its subtypes (no matching style, not the first
    # owner) gets a clear refusal naming the cell, not a quota silently dropped.
    extra = Panel.objects.create(key="extra", number=99, name_en="Extra", name_ru="Доп.")
    extra.tasks.add(extract)
    with pytest.raises(services.AuthoringError) as refused:
        services.plan_save(
            campaign=campaign, entries={(extra.pk, extract.pk): {"easy": 1, "medium": 0, "hard": 0}}
        )
    assert refused.value.field == f"quota-{extra.pk}-{extract.pk}-easy"
    assert campaign.plans.count() == 2


def test_owner_shares_round_to_exact_totals() -> None:
    # Three subtypes, the third with two leaves; owner A has the first, B the rest.
    tree = rules.Node(
        "g", (rules.Node("a"), rules.Node("b"), rules.Node("s", (rules.Node("x"), rules.Node("y"))))
    )
    owner = {"a": "A", "b": "B", "x": "B", "y": "B"}
    for count in range(0, 30):
        shares = rules.owner_shares(tree, count, owner)
        assert sum(shares.values()) == count
        # A's share is what the uniform spread gives its subtype.
        assert shares["A"] == rules.spread(tree, count)["a"]
    pruned = rules.prune(tree, {"x"})
    assert pruned == rules.Node("g", (rules.Node("s", (rules.Node("x"),)),))
    assert rules.prune(tree, set()) is None


def test_a_return_without_comment_comes_back_in_its_form(team: dict[str, Any]) -> None:
    slot = _slot(team)
    services.slot_submit(slot=slot, values=None, user=team["author"].user)
    url = reverse("authoring_review", args=[slot.pk])
    page = _client(team["reviewer"].user).post(url, {"verdict": "return", "comment": "  "})
    html = page.content.decode()
    # The slot page, the review form with the reason beside the comment box (focused), not a
    # refusal page that leads nowhere; nothing stored.
    assert page.status_code == 400
    assert 'id="review-form"' in html and 'id="review-error"' in html and "autofocus" in html
    assert "say what the author should change" in html
    assert html.index('id="review-form"') < html.index('id="review-error"')
    slot.refresh_from_db()
    assert slot.state == SlotState.SUBMITTED and not slot.reviews.exists()
