"""Today's boards become version 1 of their benchmark, frozen at the items their latest
snapshot used: the instructions of the board's task types (all POLLUX tasks when it names none)
that existed when that snapshot was computed (all of today's for a board never computed), with
their texts, references and catalogue places as they are now and the criteria the catalogue
gives them; the board's judge, gate rule and fixed settings. Its snapshots become version 1's.

The catalogue's criteria rule (taxonomy.services.CriteriaIndex) is restated here over the
historical models, as a migration must not import the app's code of a later day.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db import migrations

# taxonomy.models.GROUP_ORDER as of this migration.
GROUP_ORDER = ["critical", "general", "domain", "task", "subjective"]
NOTE = "Version 1: the board as it stood before versions (frozen at its latest snapshot's items)."


def _catalogue(apps: Any) -> Any:
    Criterion = apps.get_model("taxonomy", "Criterion")
    TaskCriterion = apps.get_model("taxonomy", "TaskCriterion")
    Task = apps.get_model("taxonomy", "Task")
    criteria = {c.pk: c for c in Criterion.objects.all()}
    listed: dict[int, list[Any]] = defaultdict(list)
    for task_id, criterion_id in TaskCriterion.objects.order_by("task_id", "position").values_list(
        "task_id", "criterion_id"
    ):
        listed[task_id].append(criteria[criterion_id])
    leaf_style = dict(Task.objects.filter(is_leaf=True).values_list("pk", "style_id"))
    domain: dict[Any, list[Any]] = defaultdict(list)
    for c in sorted(criteria.values(), key=lambda c: c.key):
        if c.group == "domain":
            domain[c.style_id].append(c)
    critical = sorted((c for c in criteria.values() if c.group == "critical"), key=lambda c: c.key)

    def for_task(task_id: int, style_id: int | None) -> list[int]:
        if task_id not in leaf_style:
            return []
        own = listed.get(task_id, [])
        style_id = style_id or leaf_style[task_id]
        chosen = [c for c in own if c.group != "domain"]
        if style_id == leaf_style[task_id]:
            chosen += [c for c in own if c.group == "domain"]
        else:
            chosen += domain.get(style_id, [])
        present = {c.key for c in chosen}
        chosen += [c for c in critical if c.key not in present]
        order = {g: i for i, g in enumerate(GROUP_ORDER)}
        chosen = sorted(chosen, key=lambda c: order.get(c.group, len(order)))
        return [c.pk for c in chosen if c.rubric_id is not None]

    return for_task


def _task_types(apps: Any) -> dict[int, str]:
    Task = apps.get_model("taxonomy", "Task")
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


def forwards(apps: Any, schema_editor: Any) -> None:
    Leaderboard = apps.get_model("leaderboards", "Leaderboard")
    BoardVersion = apps.get_model("leaderboards", "BoardVersion")
    VersionItem = apps.get_model("leaderboards", "VersionItem")
    Snapshot = apps.get_model("leaderboards", "LeaderboardSnapshot")
    Instruction = apps.get_model("material", "Instruction")
    if not Leaderboard.objects.exists():
        return
    for_task = _catalogue(apps)
    types = _task_types(apps)
    for board in Leaderboard.objects.order_by("pk"):
        if BoardVersion.objects.filter(leaderboard=board).exists():
            continue
        latest = Snapshot.objects.filter(leaderboard=board).order_by("-created_at", "-pk").first()
        instructions = Instruction.objects.filter(task__isnull=False)
        groups = sorted(board.task_groups.values_list("pk", flat=True))
        if groups:
            instructions = instructions.filter(task__group_id__in=groups)
        if latest is not None:
            instructions = instructions.filter(created_at__lte=latest.created_at)
        instructions = instructions.select_related("task", "style").order_by("pk")
        version = BoardVersion.objects.create(
            leaderboard=board,
            number=1,
            note=NOTE,
            changelog={
                "added": list(instructions.values_list("pk", flat=True)),
                "removed": [],
                "changed": [],
                "rules": [],
            },
            judge_config_id=board.judge_config_id,
            gate_rule=board.gate_rule,
            min_estimates=2,
            fixed_settings=board.fixed_settings or {},
            task_groups=groups,
        )
        VersionItem.objects.bulk_create(
            [
                VersionItem(
                    version=version,
                    instruction_id=i.pk,
                    text=i.text,
                    reference_answer=i.reference_answer,
                    task_type=types.get(i.task_id, ""),
                    task_path=i.task.path or "",
                    complexity=i.complexity or "",
                    style=i.style.key if i.style_id else "",
                    criteria=for_task(i.task_id, i.style_id),
                )
                for i in instructions
            ],
            batch_size=1000,
        )
        Snapshot.objects.filter(leaderboard=board).update(version=version)


def backwards(apps: Any, schema_editor: Any) -> None:
    versions = apps.get_model("leaderboards", "BoardVersion").objects.filter(number=1, note=NOTE)
    # The snapshots stay (a version's deletion would take them along).
    apps.get_model("leaderboards", "LeaderboardSnapshot").objects.filter(
        version__in=versions
    ).update(version=None)
    versions.delete()


class Migration(migrations.Migration):
    dependencies = [
        ("leaderboards", "0004_versions"),
        ("taxonomy", "0003_criterion_context"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
