"""The export of accepted instructions under the public POLLUX column names (JSON lines or
XLSX)."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
from django.db.models import Count, Q

from authoring.models import Slot, SlotState
from authoring.rules import review_panel_ids
from authoring.selectors import visible_panels
from dataset.instructions import instruction_notes, instruction_schema
from lib.xlsx import workbook_bytes


def _devices_cell(devices: dict[str, int]) -> str:
    return "; ".join(f"{k}: {v}" for k, v in sorted(devices.items()))


def instruction_rows(campaign: Any, user: Any) -> list[dict[str, Any]]:
    slots = (
        Slot.objects.filter(
            campaign=campaign,
            state=SlotState.ACCEPTED,
            instruction__isnull=False,
            panel__in=visible_panels(user),
        )
        .select_related("instruction", "task", "task__group", "style", "author", "panel")
        .annotate(
            n_returns=Count("events", filter=Q(events__state_to=SlotState.RETURNED), distinct=True),
            n_edits=Count("revisions", filter=Q(revisions__kind="edit"), distinct=True),
        )
        .order_by("instruction_id")
    )
    closest = dict(
        Slot.objects.filter(campaign=campaign, checks__verdict="original").values_list(
            "pk", "checks__matches"
        )
    )
    # Blind review (authoring.see_author): a reviewer of the panel gets its rows without authors.
    blind = review_panel_ids(user)
    out = []
    for slot in slots:
        instruction = slot.instruction
        assert instruction is not None  # filtered above
        names = [node.name_en for node in slot.task.lineage()]
        matches = closest.get(slot.pk) or []
        out.append(
            {
                "instruction_id": instruction.external_id or str(instruction.pk),
                "instruction": instruction.text,
                "reference_answer": instruction.reference_answer,
                "task_type": names[0] if names else "",
                "task_subtype": names[1] if len(names) > 1 else "",
                "task_subsubtype": names[2] if len(names) > 2 else "",
                "task_path": slot.task.path,
                "difficulty": slot.complexity,
                "domain": slot.style.name_en if slot.style else "",
                "is_provocative": slot.ethics_flag,
                "stylistic_devices": _devices_cell(slot.devices),
                "author": "" if slot.panel_id in blind else slot.author.pseudonym,
                "panel": slot.panel.key,
                "review_rounds": slot.round,
                "returned": slot.n_returns,
                "editorial_edits": slot.n_edits,
                "closest_similarity": float(matches[0]["similarity"]) if matches else 0.0,
                "writing_minutes": round(slot.seconds_spent / 60, 1),
            }
        )
    return out


def instructions_file(campaign: Any, user: Any, fmt: str) -> tuple[bytes, str]:
    rows = instruction_rows(campaign, user)
    if fmt == "jsonl":
        body = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
        return body, "application/x-ndjson; charset=utf-8"
    schema = instruction_schema()
    table = pa.Table.from_pylist(rows, schema=schema)
    body = workbook_bytes({"instructions": table}, notes=instruction_notes())
    return body, "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
