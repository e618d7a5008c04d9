"""The demo's writing campaign (authoring) and answer generation.

Roles in the Editing panel: anna and egor write and review instructions, vera proofreads them,
the supervisor gives the originality verdicts. Seeded: the campaign with POLLUX's default plan,
one instruction of egor's taken through every step up to the originality verdict (returned
once, accepted, proofread with a diff, checked: the supervisor gives the verdict, and it joins
the material — and the demo benchmark, whose example answers file then lacks it), one of
egor's waiting for anna's review, and two human-baseline answers to write. Generation
configurations: the demo's local OpenAI-compatible test server (settings.DEMO_JUDGE_URL; its
answers are labelled hashes, not a model's) and, with the judge extra installed, the
SmolLM2-135M model on CPU. Idempotent.
"""

from __future__ import annotations

import importlib.util
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from authoring import baseline, services
from authoring.models import BaselineAnswer, Campaign, Slot, SlotState
from demo.demo_data import DEMO_ADMIN, DEMO_SUPERVISOR
from generation.models import GenerationConfig
from generation.services import config_save
from panels.models import Expert, Membership, Panel
from taxonomy.models import Task

DEMO_CAMPAIGN = "POLLUX demo writing"
DEMO_PANEL = "editing"
ROLES = {
    "anna": {"can_author": True, "can_review": True},
    "egor": {"can_author": True, "can_review": True},
    "vera": {"can_edit": True},
}
CHECKED_TEXT = (
    "Отредактируйте текст объявления, исправив орфографические и пунктуационные ошибки, но не "
    "меняя его смысл и стиль:\n\n«Уважаемые жители! В субботу с девяти утра во дворе будут "
    "проводится работы по благоустройству детской площадки, просим неоставлять машины у "
    "подъезда номер три. Заранее благодорим за понимание.»"
)
IN_REVIEW_TEXT = (
    "Исправьте ошибки в письме коллеге и объясните каждое исправление одной фразой:\n\n"
    "«Добрый день, Ольга! Высылаю вам отчёт по проэкту, в нём учтены все ваши замечания "
    "кроме последнего, по нему я напишу отдельно. Если будут вопросы звоните в любое время.»"
)
DEMO_GENERATOR = "demo-server-answers"
SMOLLM_GENERATOR = "smollm2-cpu-answers"


def _editing_leaf() -> Task:
    leaf = Task.objects.filter(is_leaf=True, name_en="Editing").first()
    assert leaf is not None, "the POLLUX catalogue is not loaded"
    return leaf


def _roles(panel: Panel) -> dict[str, Expert]:
    experts = {}
    for username, flags in ROLES.items():
        expert = Expert.objects.filter(user__username=username).first()
        if expert is None:
            continue
        Membership.objects.filter(expert=expert, panel=panel).update(**flags)
        experts[username] = expert
    return experts


def _checked_slot(campaign: Campaign, panel: Panel, experts: dict[str, Expert]) -> None:
    egor, anna, vera = experts["egor"], experts["anna"], experts["vera"]
    leaf = _editing_leaf()
    slot = services.slot_take(
        campaign=campaign, expert=egor, panel=panel, task=leaf, complexity="easy"
    )
    values: dict[str, Any] = {
        "text": CHECKED_TEXT,
        "style": leaf.style_id,
        "devices": {},
        "seconds": 0,
    }
    services.draft_save(slot=slot, values=values, user=egor.user)
    services.slot_submit(slot=slot, values=None, user=egor.user)
    services.review_submit(
        slot=slot,
        reviewer=anna,
        verdict="return",
        comment="Уровень «лёгкий»: оставьте 3–5 предложений, как в определении уровня.",
        user=anna.user,
    )
    services.draft_save(
        slot=slot,
        values={**values, "text": CHECKED_TEXT.replace("Заранее", "Спасибо! Заранее")},
        user=egor.user,
    )
    services.slot_submit(slot=slot, values=None, user=egor.user)
    services.review_submit(slot=slot, reviewer=anna, verdict="accept", comment="", user=anna.user)
    slot.refresh_from_db()
    services.editor_save(
        slot=slot,
        text=slot.text.replace("Спасибо! Заранее", "Спасибо. Заранее"),
        reference_answer="",
        note="точка вместо восклицательного знака",
        user=vera.user,
    )
    check = services.editor_done(slot=slot, user=vera.user)
    # Its job runs once the seed's transaction commits; the page needs the matches now.
    services.originality_compute(check.pk)


def demo_authoring_ensure() -> str:
    panel = Panel.objects.get(key=DEMO_PANEL)
    experts = _roles(panel)
    if set(experts) != set(ROLES):
        return "writing: the demo experts are missing"
    campaign = Campaign.objects.filter(name=DEMO_CAMPAIGN).first()
    made = []
    if campaign is None:
        admin = get_user_model().objects.filter(username=DEMO_ADMIN.username).first()
        # The seeded rounds are single-reviewed (a scripted history); the newcomer's rounds
        # are double-reviewed one time in five.
        campaign = services.campaign_create(
            name=DEMO_CAMPAIGN, user=admin, double_review_share=0.0, panels=[panel]
        )
        _checked_slot(campaign, panel, experts)
        leaf = _editing_leaf()
        waiting = services.slot_take(
            campaign=campaign, expert=experts["egor"], panel=panel, task=leaf, complexity="hard"
        )
        services.slot_submit(
            slot=waiting,
            values={"text": IN_REVIEW_TEXT, "style": leaf.style_id, "devices": {}},
            user=experts["egor"].user,
        )
        Campaign.objects.filter(pk=campaign.pk).update(double_review_share=0.2)
        made.append("campaign")
    if not BaselineAnswer.objects.filter(panel=panel).exists():
        supervisor = get_user_model().objects.get(username=DEMO_SUPERVISOR.username)
        baseline.baseline_sample(panel=panel, size=2, user=supervisor)
        made.append("baseline")
    checked = Slot.objects.filter(campaign=campaign, state=SlotState.ORIGINALITY).count()
    return f"writing campaign “{campaign.name}”: {checked} awaiting the originality verdict" + (
        f" (created {', '.join(made)})" if made else ""
    )


def demo_generation_ensure() -> str:
    """Generation configurations for the newcomer to start runs with (none is run here)."""
    made = []
    if not GenerationConfig.objects.filter(name=DEMO_GENERATOR).exists():
        config_save(
            name=DEMO_GENERATOR,
            model_name="Demo server",
            model_version="answers",
            backend="openai",
            endpoint=settings.DEMO_JUDGE_URL,
            endpoint_model="demo",
            temperature=0.7,
            seed=1,
            max_new_tokens=512,
            batch_size=4,
        )
        made.append(DEMO_GENERATOR)
    has_torch = all(importlib.util.find_spec(n) is not None for n in ("torch", "transformers"))
    if has_torch and not GenerationConfig.objects.filter(name=SMOLLM_GENERATOR).exists():
        config_save(
            name=SMOLLM_GENERATOR,
            model_name="SmolLM2-135M",
            model_version="demo",
            backend="transformers",
            model_path="smollm2",
            max_new_tokens=64,
            batch_size=4,
        )
        made.append(SMOLLM_GENERATOR)
    return "generation configurations: " + (", ".join(made) if made else "already present")
