"""Which fields of the material can name the model that wrote an answer (the one home).

`Answer.model` names it, and so may other fields: an answer's external id (importers and the
demo build it from the model's name, "demo-<item>-<model>"), its `generation_meta` (the
generation configuration, the endpoint's model) and a pair's external id (often both models'
names). Wherever a viewer may not see the model, none of these is shown, searched or filtered
on: a page asks once whether the viewer sees models (the console: `console.view_answer_model`)
and reads these fields only through here.
"""

from __future__ import annotations

from django.db.models import Q


def answer_label(pk: int, external_id: str | None, *, models_visible: bool) -> str:
    """How an answer is named to a viewer: its external id only if he may see models."""
    if models_visible and external_id:
        return external_id
    return f"#{pk}"


def answer_external_id(external_id: str | None, *, models_visible: bool) -> str:
    """The answer's external id as shown to a viewer ("" where the model is hidden)."""
    return (external_id or "") if models_visible else ""


def answers_by_external_id(q: str, *, models_visible: bool, prefix: str = "") -> Q:
    """Answers whose external id is what was typed; for a viewer who may not see models, none
    (finding an answer by "…-<model>" would tell him which model wrote it)."""
    if not models_visible:
        return Q(pk__in=[])
    return Q(**{f"{prefix}external_id": q})
