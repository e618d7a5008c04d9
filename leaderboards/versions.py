"""Benchmark versions: a board's item set and rules, frozen on purpose.

A version is cut by an admin (`version_cut`): the instructions the board takes now (those of
its task types, all POLLUX tasks when it names none) are copied as they are — text, reference
answer, catalogue place, the criteria their answers are scored on — with the board's judge
configuration, gate rule, the aggregation's minimum of estimates and the fixed inference
settings. The changelog against the version before is computed, never typed: items added,
removed and changed (which fields), and each rule that changed; the admin adds a note.

Nothing later changes a version: its public inputs are written from its copies, a submission
to it is checked against its items and scored by its judge under its rules, and its board's
rows are computed over its items only (leaderboards.services). A board that never had a
version gets its first one when it is first used (`version_current`), so every submission and
every snapshot belongs to a version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from dataset.aggregation import AggregationSettings
from judging.models import JudgeConfig
from leaderboards import hooks
from leaderboards.models import BoardVersion, GateRule, Leaderboard, VersionItem
from material.models import Instruction
from taxonomy.models import Task, TaskGroup
from taxonomy.services import CriteriaIndex

# The item fields a changelog compares (and names when one changed).
ITEM_FIELDS = ("text", "reference_answer", "task_type", "task_path", "complexity", "style")
# The rules a changelog compares, as stored on a version.
RULE_FIELDS = (
    "judge_config_id",
    "gate_rule",
    "min_estimates",
    "fixed_settings",
    "task_groups",
    "closed",
)


# How a changelog names each rule on the page (the stored changelog keeps the field names).
RULE_LABELS = {
    "judge_config_id": gettext_lazy("designated judge"),
    "gate_rule": gettext_lazy("critical gate rule"),
    "min_estimates": gettext_lazy("minimum of estimates per triple"),
    "fixed_settings": gettext_lazy("fixed inference settings"),
    "task_groups": gettext_lazy("Task types (none: all)"),
    "closed": gettext_lazy("closed test"),
}


class NothingToCut(Exception):
    """The board's items and rules are those of its latest version: no new version."""


@dataclass(frozen=True)
class Draft:
    """What a version cut now would hold."""

    items: list[VersionItem]
    rules: dict[str, Any]


def board_instructions(board: Leaderboard) -> QuerySet[Instruction]:
    """The instructions the board takes today (a live query, for cutting only): those of its
    task types (all POLLUX tasks when it names none), in id order."""
    qs = Instruction.objects.filter(task__isnull=False)
    groups = list(board.task_groups.values_list("pk", flat=True))
    if groups:
        qs = qs.filter(task__group_id__in=groups)
    return qs.order_by("pk")


def _task_types() -> dict[int, str]:
    """Each catalogue task's task type name: its top-level task's (POLLUX's 35 task types)."""
    rows = {
        pk: (parent, level, name)
        for pk, parent, level, name in Task.objects.values_list(
            "pk", "parent_id", "level", "name_en"
        )
    }
    out = {}
    for pk in rows:
        node = pk
        while rows[node][1] > 0 and rows[node][0] is not None:
            node = rows[node][0]
        out[pk] = rows[node][2]
    return out


def draft_items(instructions: Iterable[Instruction]) -> list[VersionItem]:
    """Unsaved copies of the instructions as they are now."""
    index = CriteriaIndex()
    types = _task_types()
    items = []
    for instruction in instructions:
        assert instruction.task_id is not None  # board_instructions keeps POLLUX tasks only
        criteria = [
            c.pk
            for c in index.for_task(instruction.task_id, instruction.style_id)
            if c.rubric_id is not None
        ]
        items.append(
            VersionItem(
                instruction_id=instruction.pk,
                text=instruction.text,
                reference_answer=instruction.reference_answer,
                task_type=types.get(instruction.task_id, ""),
                task_path=instruction.task.path if instruction.task else "",
                complexity=instruction.complexity or "",
                style=instruction.style.key if instruction.style else "",
                criteria=criteria,
            )
        )
    return items


def board_rules(board: Leaderboard, *, closed: bool = False) -> dict[str, Any]:
    """The rules a version cut now would freeze: the board's settings, and whether the version
    is a closed test (its inputs never downloadable; participants give an endpoint)."""
    return {
        "closed": closed,
        "judge_config_id": board.judge_config_id,
        "gate_rule": board.gate_rule,
        "min_estimates": AggregationSettings().min_estimates,
        "fixed_settings": dict(board.fixed_settings or {}),
        "task_groups": sorted(board.task_groups.values_list("pk", flat=True)),
    }


def draft_of(board: Leaderboard, *, closed: bool = False) -> Draft:
    instructions = board_instructions(board).select_related("task", "style")
    return Draft(draft_items(instructions), board_rules(board, closed=closed))


def _item_key(item: VersionItem) -> tuple[Any, ...]:
    return (*(getattr(item, f) for f in ITEM_FIELDS), list(item.criteria))


def changelog_of(previous: BoardVersion | None, draft: Draft) -> dict[str, Any]:
    """What the draft changes against the previous version (everything is "added" for the
    first one)."""
    old = {i.instruction_id: i for i in previous.items.all()} if previous else {}
    new = {i.instruction_id: i for i in draft.items}
    changed = []
    for pk in sorted(set(old) & set(new)):
        a, b = old[pk], new[pk]
        fields = [f for f in ITEM_FIELDS if getattr(a, f) != getattr(b, f)]
        if list(a.criteria) != list(b.criteria):
            fields.append("criteria")
        if fields:
            changed.append({"instruction": pk, "fields": fields})
    rules = []
    if previous is not None:
        for name in RULE_FIELDS:
            was, now = getattr(previous, name), draft.rules[name]
            if was != now:
                rules.append({"setting": name, "old": was, "new": now})
    return {
        "added": sorted(set(new) - set(old)),
        "removed": sorted(set(old) - set(new)),
        "changed": changed,
        "rules": rules,
    }


def changelog_empty(changelog: dict[str, Any]) -> bool:
    return not any(changelog.get(k) for k in ("added", "removed", "changed", "rules"))


def version_latest(board: Leaderboard) -> BoardVersion | None:
    return BoardVersion.objects.filter(leaderboard=board).order_by("-number").first()


@transaction.atomic
def version_cut(
    board: Leaderboard, *, actor: Any, note: str = "", closed: bool = False
) -> BoardVersion:
    """Freeze the board's items and rules as its next version (a closed test when `closed`),
    with the computed changelog and the admin's note. Raises NothingToCut when nothing changed
    since the latest version."""
    # Two admins cutting at once: the second waits here and then finds nothing new.
    locked = Leaderboard.objects.select_for_update().get(pk=board.pk)
    previous = version_latest(locked)
    draft = draft_of(locked, closed=closed)
    changelog = changelog_of(previous, draft)
    if previous is not None and changelog_empty(changelog):
        raise NothingToCut(
            _("Nothing changed since version %(n)s: no new version.") % {"n": previous.number}
        )
    version = BoardVersion.objects.create(
        leaderboard=locked,
        number=(previous.number + 1) if previous else 1,
        note=note.strip(),
        changelog=changelog,
        created_by=actor if getattr(actor, "is_authenticated", False) else None,
        **draft.rules,
    )
    for item in draft.items:
        item.version = version
    VersionItem.objects.bulk_create(draft.items, batch_size=1000)
    return version


def version_current(board: Leaderboard) -> BoardVersion:
    """The board's latest version; a board that never had one gets its first now."""
    latest = version_latest(board)
    if latest is not None:
        return latest
    try:
        return version_cut(board, actor=None, note="")
    except NothingToCut:  # cut meanwhile by another request
        latest = version_latest(board)
        assert latest is not None
        return latest


def version_pick(board: Leaderboard, number: str | int | None) -> BoardVersion | None:
    """The board's version of that number, its current one when none is asked; None for a
    number it does not have. Raises ValueError for a number that is not one."""
    if number in (None, ""):
        return version_current(board)
    text = str(number).strip()
    if not (text.isascii() and text.isdecimal() and len(text) <= 9):
        raise ValueError(_("version: a version number is expected, like 1."))
    return BoardVersion.objects.filter(leaderboard=board, number=int(text)).first()


def version_adopt_settings(board: Leaderboard) -> bool:
    """A version that has no judge yet and no submission takes the board's judge and fixed
    settings (it has scored nothing, so no score changes): the usual way to open a new board
    to participants. True when it did."""
    with transaction.atomic():
        current = BoardVersion.objects.select_for_update().filter(pk=version_current(board).pk)
        version = current.get()
        if version.judge_config_id is not None or board.judge_config_id is None:
            return False
        if any(on == version.pk for on, _shown in hooks.submitted().values()):
            return False
        version.judge_config_id = board.judge_config_id
        version.fixed_settings = dict(board.fixed_settings or {})
        version.save(update_fields=["judge_config", "fixed_settings"])
    return True


def item_criteria(version: BoardVersion) -> dict[int, set[int]]:
    """{instruction id: the criteria its answers are scored on} of the version."""
    return {pk: set(c) for pk, c in version.items.values_list("instruction_id", "criteria")}


def public_rows(version: BoardVersion) -> list[dict[str, str]]:
    """The rows participants download, from the version's copies: the instruction and its
    catalogue place, never the reference answer."""
    return [
        {
            "instruction_id": str(pk),
            "instruction": text,
            "task_type": task_type,
            "task_path": task_path,
            "complexity": complexity,
            "style": style,
            "answer": "",
        }
        for pk, text, task_type, task_path, complexity, style in version.items.order_by(
            "instruction_id"
        ).values_list("instruction_id", "text", "task_type", "task_path", "complexity", "style")
    ]


def rules_shown(rules: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    """A changelog's rule changes as the page names them: (rule, old, new), a judge by its
    configuration's name, a gate rule by its label, task types by their names."""
    judges = {
        c.pk: str(c)
        for c in JudgeConfig.objects.filter(
            pk__in=[
                v
                for r in rules
                if r["setting"] == "judge_config_id"
                for v in (r["old"], r["new"])
                if v is not None
            ]
        )
    }
    groups = {g.pk: g.name for g in TaskGroup.objects.all()} if rules else {}

    def value(setting: str, raw: Any) -> str:
        if raw in (None, "", [], {}) and setting != "closed":
            return "—"
        if setting == "judge_config_id":
            return judges.get(raw, str(raw))
        if setting == "gate_rule":
            return str(GateRule(raw).label) if raw in GateRule.values else str(raw)
        if setting == "task_groups":
            return ", ".join(groups.get(pk, str(pk)) for pk in raw)
        if setting == "closed":
            return str(_("yes") if raw else _("no"))
        return str(raw)

    return [
        (
            str(RULE_LABELS.get(r["setting"], r["setting"])),
            value(r["setting"], r["old"]),
            value(r["setting"], r["new"]),
        )
        for r in rules
    ]
