"""Writes of instruction writing: campaigns and plan versions, slots, drafts, reviews, the
editorial step, the originality check and acceptance into the material.

Every move of a slot goes through `_move`, which asks protocol.authoring.next_state under a row
lock: a double click or a second tab meets the state the first one left, and no state is
skipped. Who may act is django-rules' (authoring.rules), asked by the views; the services
re-check what the data decides (an author never reviews his own instruction, a reviewer
reviews a round once).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from django.db import transaction
from django.db.models import Case, Count, IntegerField, Max, Value, When
from django.utils import timezone
from django.utils.translation import gettext as _

from authoring.models import (
    Campaign,
    OriginalityCheck,
    PlanVersion,
    Quota,
    ReferenceCorpus,
    ReferenceText,
    Review,
    Revision,
    Slot,
    SlotEvent,
    SlotState,
)
from jobs.models import JobKind
from jobs.services import enqueue
from lib.integers import ascii_int
from lib.neardup import NearDupIndex
from material.models import Instruction
from panels.models import Expert, Membership, Panel
from protocol import authoring as rules
from taxonomy.models import Task
from work.routing import RoutingTable

# The closest matches kept per check, and the least similarity worth showing a supervisor.
MATCHES_KEPT = 10
MIN_SIMILARITY = 0.2
EXCERPT_CHARS = 300
# A single autosave counts at most this much writing time (a tab left open overnight is not
# writing); the wall time since the previous save bounds it too.
MAX_SECONDS_PER_SAVE = 15 * 60


class AuthoringError(Exception):
    """A refused action, with the field it is about when there is one (views answer 4xx)."""

    def __init__(self, message: str, field: str = "", status: int = 400) -> None:
        super().__init__(message)
        self.field = field
        self.status = status


class DraftInvalid(AuthoringError):
    def __init__(self, errors: dict[str, str]) -> None:
        super().__init__("; ".join(f"{k}: {v}" for k, v in errors.items()), status=422)
        self.errors = errors


# --- campaigns and plans ------------------------------------------------------------------------


def _tree(group: Task, children: Mapping[int | None, list[Task]]) -> rules.Node:
    kids = children.get(group.pk, [])
    return rules.Node(group.pk, tuple(_tree(child, children) for child in kids))


def task_children() -> dict[int | None, list[Task]]:
    children: dict[int | None, list[Task]] = defaultdict(list)
    for task in Task.objects.order_by("position", "pk"):
        children[task.parent_id].append(task)
    return children


@dataclass
class _PlanTrees:
    """The task tree and who owns each leaf, loaded once per plan save.

    A group several panels own (Extract: Editing, Science, Literature, Journalism, Law) is split
    by subtype: a leaf belongs to the owner whose functional styles include the leaf's style,
    else to the lowest-numbered owner, which is the routing's rule for the same question
    (`work.routing.RoutingTable.task_owner`; POLLUX: "resolved according to the functional
    style of an instruction"). A group with one owner is all that owner's."""

    children: dict[int | None, list[Task]]
    routing: RoutingTable

    @classmethod
    def load(cls) -> _PlanTrees:
        return cls(task_children(), RoutingTable.load())

    def tree(self, group: Task) -> rules.Node:
        return _tree(group, self.children)

    def owner_of(self, group: Task) -> dict[int, int | None]:
        """{leaf id: owning panel id} for the leaves of `group`."""
        out: dict[int, int | None] = {}
        stack = [group]
        while stack:
            task = stack.pop()
            kids = self.children.get(task.pk, [])
            if not kids:
                out[task.pk] = self.routing.task_owner(task.pk, task.style_id)
            stack.extend(kids)
        return out

    def panel_tree(self, group: Task, panel_id: int) -> rules.Node | None:
        """The part of the group's tree whose leaves the panel owns (None: it owns none)."""
        mine = {leaf for leaf, owner in self.owner_of(group).items() if owner == panel_id}
        return rules.prune(self.tree(group), mine)


def _quota_rows(
    plan: PlanVersion,
    entries: Mapping[tuple[int, int], Mapping[str, int]],
    trees: _PlanTrees | None = None,
) -> list[Quota]:
    """The quota rows of a plan: each (panel, group) count spread uniformly over the leaves of
    the group that panel owns (every leaf when it is the group's only owner)."""
    trees = trees or _PlanTrees.load()
    groups = Task.objects.in_bulk({g for _, g in entries})
    rows: list[Quota] = []
    for (panel_id, group_id), counts in entries.items():
        tree = trees.panel_tree(groups[group_id], panel_id)
        if tree is None:  # owns none of its subtypes (plan_save refuses a count for it)
            continue
        for level in rules.COMPLEXITIES:
            for leaf, count in rules.spread(tree, int(counts.get(level, 0))).items():
                rows.append(
                    Quota(
                        plan=plan,
                        panel_id=panel_id,
                        group_id=group_id,
                        task_id=leaf,
                        complexity=level,
                        count=count,
                    )
                )
    return rows


def default_entries(panels: Iterable[Panel]) -> dict[tuple[int, int], dict[str, int]]:
    """POLLUX's default plan: every task group 10/15/25 (40/45/40 for STEM and the code
    groups), in all, whoever writes it; a group several panels own is divided between them by
    the subtypes each owns (`protocol.authoring.owner_shares`), so it still totals 50."""
    trees = _PlanTrees.load()
    out: dict[tuple[int, int], dict[str, int]] = {}
    for panel in panels:
        for group in panel.tasks.filter(level=0).order_by("position"):
            tree, owner_of = trees.tree(group), trees.owner_of(group)
            out[(panel.pk, group.pk)] = {
                level: rules.owner_shares(tree, count, owner_of).get(panel.pk, 0)
                for level, count in rules.default_quota(group.name_en).items()
            }
    return out


@transaction.atomic
def campaign_create(
    *, name: str, user: Any = None, double_review_share: float = 0.1, panels: Any = None
) -> Campaign:
    name = name.strip()
    if not name:
        raise AuthoringError(_("a campaign needs a name"), "name")
    if not 0 <= double_review_share <= 1:
        raise AuthoringError(_("must be between 0 and 1"), "double_review_share")
    if Campaign.objects.filter(name=name).exists():
        raise AuthoringError(
            _("a campaign named %(name)s exists") % {"name": repr(name)}, "name", status=409
        )
    campaign = Campaign.objects.create(
        name=name, created_by=user, double_review_share=double_review_share
    )
    chosen = Panel.objects.all() if panels is None else panels
    plan_save(
        campaign=campaign,
        entries=default_entries(chosen),
        note="POLLUX defaults",
        user=user,
        replace=True,
    )
    return campaign


def current_plan(campaign: Campaign) -> PlanVersion | None:
    return campaign.plans.order_by("-number").first()


def plan_entries(plan: PlanVersion | None) -> dict[tuple[int, int], dict[str, int]]:
    """{(panel id, group id): {level: count}} of a plan version (sums over the subtypes)."""
    out: dict[tuple[int, int], dict[str, int]] = defaultdict(
        lambda: dict.fromkeys(rules.COMPLEXITIES, 0)
    )
    if plan is None:
        return {}
    for q in plan.quotas.values("panel_id", "group_id", "complexity", "count"):
        out[(q["panel_id"], q["group_id"])][q["complexity"]] += q["count"]
    return dict(out)


@transaction.atomic
def plan_save(
    *,
    campaign: Campaign,
    entries: Mapping[tuple[int, int], Mapping[str, int]],
    note: str = "",
    user: Any = None,
    replace: bool = False,
) -> PlanVersion:
    """A new plan version: the previous one's counts with `entries` changed (or only `entries`
    with `replace`). A group may be entered only for a panel that owns it."""
    for (panel_id, group_id), counts in entries.items():
        for level in rules.COMPLEXITIES:
            value = counts.get(level, 0)
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000:
                raise AuthoringError(
                    _("the %(level)s count must be a whole number from 0 to 10,000")
                    % {"level": level},
                    f"quota-{panel_id}-{group_id}-{level}",
                )
    owned = set(
        Panel.tasks.through.objects.filter(
            panel_id__in={p for p, _ in entries}, task__level=0
        ).values_list("panel_id", "task_id")
    )
    for key in entries:
        if key not in owned:
            raise AuthoringError(
                _("the panel does not own this task group"), f"quota-{key[0]}-{key[1]}"
            )
    trees = _PlanTrees.load()
    groups = Task.objects.in_bulk({g for _, g in entries})
    for (panel_id, group_id), counts in entries.items():
        positive = [lv for lv in rules.COMPLEXITIES if counts.get(lv, 0) > 0]
        if positive and trees.panel_tree(groups[group_id], panel_id) is None:
            raise AuthoringError(
                _("the panel owns none of this task group's subtypes"),
                f"quota-{panel_id}-{group_id}-{positive[0]}",
            )
    # Lock the campaign: two admins saving at once get versions n+1 and n+2.
    Campaign.objects.select_for_update().get(pk=campaign.pk)
    previous = current_plan(campaign)
    merged = {} if replace else plan_entries(previous)
    merged.update({k: dict(v) for k, v in entries.items()})
    plan = PlanVersion.objects.create(
        campaign=campaign,
        number=(previous.number + 1) if previous else 1,
        note=note[:500],
        created_by=user,
    )
    Quota.objects.bulk_create(_quota_rows(plan, merged, trees))
    return plan


# --- slots --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OpenSlot:
    panel: Panel
    task: Task
    complexity: str
    quota: int
    taken: int

    @property
    def left(self) -> int:
        return max(0, self.quota - self.taken)


def author_panels(expert: Expert) -> list[Panel]:
    return list(
        Panel.objects.filter(
            memberships__expert=expert, memberships__can_author=True, memberships__is_paused=False
        ).order_by("number")
    )


# Levels easy, medium, hard in that order (not the alphabet's).
_LEVEL_ORDER = Case(
    *(When(complexity=level, then=Value(i)) for i, level in enumerate(rules.COMPLEXITIES)),
    output_field=IntegerField(),
)


def open_slots(campaign: Campaign, expert: Expert) -> list[OpenSlot]:
    """The slots an author may take: his panels' quotas of the current plan not yet taken."""
    plan = current_plan(campaign)
    panels = {p.pk: p for p in author_panels(expert)}
    if plan is None or not panels:
        return []
    taken = {
        (r["panel_id"], r["task_id"], r["complexity"]): r["n"]
        for r in Slot.objects.filter(campaign=campaign, panel_id__in=panels)
        .values("panel_id", "task_id", "complexity")
        .annotate(n=Count("pk"))
    }
    quotas = (
        plan.quotas.filter(panel_id__in=panels, count__gt=0)
        .select_related("task", "task__group")
        .order_by("panel__number", "task__position", _LEVEL_ORDER)
    )
    out = []
    for q in quotas:
        n = taken.get((q.panel_id, q.task_id, q.complexity), 0)
        if n < q.count:
            out.append(OpenSlot(panels[q.panel_id], q.task, q.complexity, q.count, n))
    return out


def _event(slot: Slot, action: str, before: str, user: Any, note: str = "") -> None:
    SlotEvent.objects.create(
        slot=slot, action=action, state_from=before, state_to=slot.state, by=user, note=note
    )


@transaction.atomic
def slot_take(
    *, campaign: Campaign, expert: Expert, panel: Panel, task: Task, complexity: str
) -> Slot:
    """Give the author one slot of (panel, task, level) if the plan has one left."""
    if not Membership.objects.filter(
        expert=expert, panel=panel, can_author=True, is_paused=False
    ).exists():
        raise AuthoringError(_("you do not write instructions for this panel"), status=403)
    plan = current_plan(campaign)
    quota = (
        Quota.objects.select_for_update()
        .filter(plan=plan, panel=panel, task=task, complexity=complexity)
        .first()
    )
    if quota is None:
        raise AuthoringError(_("the plan has no such slot"), status=404)
    # The quota row's lock serialises takers of this slot kind: the count below stays true.
    taken = Slot.objects.filter(
        campaign=campaign, panel=panel, task=task, complexity=complexity
    ).count()
    if taken >= quota.count:
        raise AuthoringError(_("every slot of this kind is taken"), status=409)
    slot = Slot.objects.create(
        campaign=campaign, panel=panel, task=task, complexity=complexity, author=expert
    )
    _event(slot, "take", "", expert.user)
    return slot


@transaction.atomic
def slot_release(*, slot: Slot, user: Any) -> None:
    """An author gives back a slot he has not submitted: it opens for the others."""
    slot = Slot.objects.select_for_update().get(pk=slot.pk)
    if slot.state != SlotState.DRAFT or slot.round:
        raise AuthoringError(_("only a draft never submitted can be given back"), status=409)
    slot.delete()


def _locked(slot: Slot) -> Slot:
    return Slot.objects.select_for_update().get(pk=slot.pk)


def _move(slot: Slot, action: str, user: Any, note: str = "") -> Slot:
    before = slot.state
    try:
        slot.state = rules.next_state(before, action)
    except rules.TransitionError as exc:
        raise AuthoringError(str(exc), status=409) from None
    slot.save()
    _event(slot, action, before, user, note)
    return slot


def _apply_fields(slot: Slot, values: Mapping[str, Any], submitting: bool) -> None:
    from taxonomy.models import FunctionalStyle

    errors = rules.draft_errors(values, submitting=False)
    style = values.get("style")
    style_obj = None
    if style not in (None, ""):
        style_pk = ascii_int(str(style))
        if style_pk is not None and style_pk < 2**31:
            style_obj = FunctionalStyle.objects.filter(pk=style_pk).first()
        if style_obj is None:
            errors["style"] = _("unknown functional style")
    if errors:
        raise DraftInvalid(errors)
    slot.text = values.get("text", "")
    slot.reference_answer = values.get("reference_answer", "")
    slot.style = style_obj
    slot.ethics_flag = bool(values.get("ethics_flag"))
    slot.devices = dict(values.get("devices") or {})
    if submitting:
        errors = rules.draft_errors({**values, "style": slot.style_id}, submitting=True)
        if errors:
            raise DraftInvalid(errors)


@transaction.atomic
def draft_save(*, slot: Slot, values: Mapping[str, Any], user: Any) -> Slot:
    """Autosave: store the fields as they are (incomplete is fine) and add the writing time."""
    slot = _locked(slot)
    if not slot.editable_by_author:
        raise AuthoringError(
            _("the instruction is %(state)s: the author cannot change it now")
            % {"state": slot.get_state_display()},
            status=409,
        )
    _apply_fields(slot, values, submitting=False)
    _add_time(slot, values)
    slot.save()
    return slot


def _add_time(slot: Slot, values: Mapping[str, Any]) -> None:
    """Add the writing time the page reports, bounded by the wall time since the last save."""
    try:
        claimed = float(values.get("seconds") or 0)
    except (TypeError, ValueError):
        raise DraftInvalid({"seconds": _("must be a number of seconds")}) from None
    if claimed != claimed or claimed < 0:  # NaN or negative
        raise DraftInvalid({"seconds": _("must be a number of seconds")})
    elapsed = (timezone.now() - slot.saved_at).total_seconds() + 5
    slot.seconds_spent += int(min(claimed, elapsed, MAX_SECONDS_PER_SAVE))


def _revision(slot: Slot, kind: str, user: Any, note: str = "") -> Revision:
    number = (slot.revisions.aggregate(m=Max("number"))["m"] or 0) + 1
    return Revision.objects.create(
        slot=slot,
        number=number,
        kind=kind,
        text=slot.text,
        reference_answer=slot.reference_answer,
        by=user,
        note=note[:500],
    )


@transaction.atomic
def slot_submit(*, slot: Slot, values: Mapping[str, Any] | None, user: Any) -> Slot:
    """The author submits (or resubmits) the instruction for review: a revision is kept."""
    slot = _locked(slot)
    if values is not None:
        if not slot.editable_by_author:
            raise AuthoringError(_("the instruction is not the author's to change now"), status=409)
        _apply_fields(slot, values, submitting=True)
        _add_time(slot, values)
    else:
        errors = rules.draft_errors(
            {
                "text": slot.text,
                "reference_answer": slot.reference_answer,
                "style": slot.style_id,
                "devices": slot.devices,
            },
            submitting=True,
        )
        if errors:
            raise DraftInvalid(errors)
    slot.round += 1
    slot.double_review = rules.needs_double_review(
        slot.pk, slot.round, slot.campaign.double_review_share
    )
    _move(slot, "submit", user)
    _revision(slot, Revision.Kind.SUBMISSION, user)
    return slot


@transaction.atomic
def review_submit(*, slot: Slot, reviewer: Expert, verdict: str, comment: str, user: Any) -> Review:
    """A reviewer's verdict on the current round; the round closes when its reviewers (two for
    the double-reviewed sample) have all spoken: accepted only if all accept."""
    slot = _locked(slot)
    if slot.author_id == reviewer.pk:
        raise AuthoringError(_("an author does not review his own instruction"), status=403)
    if verdict not in Review.Verdict.values:
        raise AuthoringError(_("the verdict must be accept or return"), "verdict")
    comment = (comment or "").strip()
    if len(comment) > rules.MAX_COMMENT_CHARS:
        raise AuthoringError(
            _("at most %(max)s characters") % {"max": format(rules.MAX_COMMENT_CHARS, ",")},
            "comment",
        )
    if verdict == Review.Verdict.RETURN and not comment:
        raise AuthoringError(_("say what the author should change"), "comment")
    if slot.state != SlotState.SUBMITTED:
        raise AuthoringError(
            _("the instruction is %(state)s") % {"state": slot.get_state_display()},
            status=409,
        )
    if slot.reviews.filter(round=slot.round, reviewer=reviewer).exists():
        raise AuthoringError(_("you have reviewed this round already"), status=409)
    review = Review.objects.create(
        slot=slot, round=slot.round, reviewer=reviewer, verdict=verdict, comment=comment
    )
    verdicts = list(slot.reviews.filter(round=slot.round).values_list("verdict", flat=True))
    if len(verdicts) >= (2 if slot.double_review else 1):
        outcome = rules.round_verdict(verdicts)
        notes = "\n\n".join(
            r.comment for r in slot.reviews.filter(round=slot.round) if r.comment.strip()
        )
        _move(slot, outcome, user, notes)
    return review


@transaction.atomic
def editor_save(*, slot: Slot, text: str, reference_answer: str, note: str, user: Any) -> Slot:
    """An editorial correction (spelling, misprints): kept as a revision, diffable."""
    slot = _locked(slot)
    if slot.state != SlotState.EDITING:
        raise AuthoringError(
            _("the instruction is %(state)s") % {"state": slot.get_state_display()},
            status=409,
        )
    errors = rules.draft_errors(
        {"text": text, "reference_answer": reference_answer, "style": slot.style_id},
        submitting=True,
    )
    if errors:
        raise DraftInvalid(errors)
    if text == slot.text and reference_answer == slot.reference_answer:
        return slot
    slot.text, slot.reference_answer = text, reference_answer
    slot.save()
    _revision(slot, Revision.Kind.EDIT, user, note)
    return slot


@transaction.atomic
def editor_done(*, slot: Slot, user: Any) -> OriginalityCheck:
    """The editorial step is over: the instruction goes to its originality check (queued)."""
    slot = _move(_locked(slot), "proofread", user)
    return originality_request(slot=slot, user=user)


# --- originality --------------------------------------------------------------------------------


@transaction.atomic
def originality_request(*, slot: Slot, user: Any) -> OriginalityCheck:
    """Queue a near-duplicate search of the slot's text (a job: the index over every text of
    the platform takes seconds at POLLUX scale, not a request's time)."""
    if slot.state != SlotState.ORIGINALITY:
        raise AuthoringError(
            _("the instruction is %(state)s") % {"state": slot.get_state_display()},
            status=409,
        )
    check = OriginalityCheck.objects.create(slot=slot)
    check.job = enqueue(JobKind.ORIGINALITY, {"check": check.pk}, user=user)
    check.save(update_fields=["job"])
    return check


def _corpus_rows(exclude_slot: int) -> Iterable[tuple[tuple[str, int], str, str]]:
    """(key, label, text) of every text an instruction must not copy: the material's
    instructions, the other slots' current texts and the admins' reference corpora."""
    own = Slot.objects.filter(pk=exclude_slot).values_list("instruction_id", flat=True).first()
    instructions = Instruction.objects.all() if own is None else Instruction.objects.exclude(pk=own)
    for pk, ext, text in instructions.values_list("pk", "external_id", "text").iterator(
        chunk_size=2000
    ):
        yield ("instruction", pk), ext or f"instruction {pk}", text
    for pk, text in (
        Slot.objects.exclude(pk=exclude_slot)
        .exclude(text="")
        .filter(instruction__isnull=True)
        .values_list("pk", "text")
        .iterator(chunk_size=2000)
    ):
        yield ("slot", pk), f"slot {pk}", text
    for pk, corpus, ext, text in ReferenceText.objects.values_list(
        "pk", "corpus__name", "external_id", "text"
    ).iterator(chunk_size=2000):
        yield ("reference", pk), f"{corpus}: {ext or pk}", text


def originality_compute(check_id: int) -> OriginalityCheck:
    """Search the slot's text among every other text (lib.neardup: MinHash/LSH candidates,
    exact Jaccard of word 5-shingles for the shown similarity) and store the closest."""
    check = OriginalityCheck.objects.select_related("slot").get(pk=check_id)
    keys: list[tuple[str, int]] = []
    labels: dict[tuple[str, int], str] = {}
    texts: dict[tuple[str, int], str] = {}
    for key, label, text in _corpus_rows(check.slot_id):
        keys.append(key)
        labels[key] = label
        texts[key] = text
    index = NearDupIndex()
    index.add(keys, [texts[k] for k in keys])
    [found] = index.query([check.slot.text], top=MATCHES_KEPT, min_similarity=MIN_SIMILARITY)
    found_keys = [(cast(tuple[str, int], m.key), m.similarity) for m in found]
    check.matches = [
        {
            "source": key[0],
            "id": key[1],
            "label": labels[key],
            "similarity": round(float(similarity), 4),
            "excerpt": texts[key][:EXCERPT_CHARS],
        }
        for key, similarity in found_keys
    ]
    check.compared = len(keys)
    check.checked_at = timezone.now()
    check.save(update_fields=["matches", "compared", "checked_at"])
    return check


@transaction.atomic
def originality_verdict(*, slot: Slot, verdict: str, comment: str, user: Any) -> Slot:
    """The supervisor's verdict on the latest check: original → accepted into the material;
    not original → back to the author with the comment."""
    slot = _locked(slot)
    check = slot.checks.order_by("-pk").first()
    if slot.state != SlotState.ORIGINALITY or check is None:
        raise AuthoringError(
            _("the instruction is %(state)s") % {"state": slot.get_state_display()},
            status=409,
        )
    if check.checked_at is None:
        raise AuthoringError(_("the check has not finished yet"), status=409)
    comment = (comment or "").strip()[: rules.MAX_COMMENT_CHARS]
    if verdict == OriginalityCheck.Verdict.ORIGINAL:
        action = "original"
    elif verdict == OriginalityCheck.Verdict.NOT_ORIGINAL:
        if not comment:
            raise AuthoringError(_("say which text it copies"), "comment")
        action = "not_original"
    else:
        raise AuthoringError(_("the verdict must be original or not_original"), "verdict")
    check.verdict, check.verdict_by, check.verdict_at = verdict, user, timezone.now()
    check.comment = comment
    check.save()
    _move(slot, action, user, comment)
    if slot.state == SlotState.ACCEPTED:
        _to_material(slot)
    return slot


def _to_material(slot: Slot) -> Instruction:
    """The accepted instruction becomes material exactly like an imported one; its slot keeps
    the author, revisions and reviews (Instruction.slot)."""
    instruction = Instruction.objects.create(
        external_id=f"authored-{slot.pk}",
        text=slot.text,
        reference_answer=slot.reference_answer,
        task=slot.task,
        style=slot.style,
        complexity=slot.complexity,
        ethics_flag=slot.ethics_flag,
        author=slot.author.pseudonym,
        source=f"authoring: {slot.campaign.name}",
    )
    slot.instruction = instruction
    slot.save(update_fields=["instruction"])
    return instruction


@transaction.atomic
def corpus_upload(*, name: str, rows: Iterable[tuple[str, str]], user: Any) -> ReferenceCorpus:
    corpus, _created = ReferenceCorpus.objects.get_or_create(
        name=name, defaults={"uploaded_by": user}
    )
    ReferenceText.objects.bulk_create(
        [ReferenceText(corpus=corpus, external_id=ext[:200], text=text) for ext, text in rows],
        batch_size=2000,
    )
    return corpus
