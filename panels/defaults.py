"""The POLLUX panel layout: which panel owns which tasks, styles and criterion groups.

Admins may edit all of this afterwards; `ensure_default_panels` only fills in what is missing.
"""

from __future__ import annotations

from django.db import transaction

from panels.models import Panel
from taxonomy.models import CriterionGroup, FunctionalStyle, Task

# number, key, English name, Russian name, top-level tasks (English names), styles, groups
DEFAULT_PANELS: list[tuple[int, str, str, str, list[str], list[str], list[str]]] = [
    (
        0,
        "crowd",
        "Crowd",
        "Краудсорсинг",
        [],
        [],
        [CriterionGroup.CRITICAL, CriterionGroup.SUBJECTIVE],
    ),
    (
        1,
        "editing",
        "Editing",
        "Редактура",
        [
            "Editing",
            "Rephrasing",
            "Summarizing",
            "Extract",
            "Text plan",
            "Text evaluation",
            "Word tasks (editorial brainstorming)",
            "Writing instructions",
        ],
        [],
        [CriterionGroup.GENERAL],
    ),
    (
        2,
        "science",
        "Science",
        "Наука",
        ["Scientific text", "Extract", "Concept explanation"],
        ["scientific-text"],
        [],
    ),
    (
        3,
        "literature",
        "Literature",
        "Литература",
        [
            "Literary text",
            "Extract",
            "Style transfer",
            "Text interpretation (subjective)",
            "Creative brainstorming",
        ],
        ["literary-text"],
        [],
    ),
    (
        4,
        "journalism",
        "Journalism",
        "Журналистика",
        ["Journalistic text", "Extract", "General-purpose brainstorming", "Applied brainstorming"],
        ["journalistic-text"],
        [],
    ),
    (
        5,
        "law",
        "Law, Diplomacy, Business",
        "Право, дипломатия, бизнес",
        ["Official text", "Extract", "Recommendations", "Advice", "Plans"],
        ["official-text"],
        [],
    ),
    (
        6,
        "translation",
        "Translation",
        "Перевод",
        ["Translation, English-Russian language pair"],
        [],
        [],
    ),
    (
        7,
        "character",
        "AI as a Character",
        "ИИ как персонаж",
        ["Informal setting", "Formal setting"],
        ["conversational"],
        [],
    ),
    (
        8,
        "stem",
        "STEM",
        "STEM",
        ["STEM exercises", "Data analysis", "Problem-solving activities (logic)"],
        [],
        [],
    ),
    (
        9,
        "code",
        "Code",
        "Программирование",
        ["Code creation", "Code analysis", "Code modification"],
        [],
        [],
    ),
    (
        10,
        "qa",
        "QA",
        "Вопросно-ответные задачи",
        [
            "Fact checking",
            "Describing objects game",
            "Data retrieval",
            "Text analysis (objective)",
            "Text-dependent questions",
        ],
        [],
        [],
    ),
]


@transaction.atomic
def ensure_default_panels() -> list[Panel]:
    """Create the POLLUX panels if absent (the catalogue must be loaded first)."""
    panels = []
    for number, key, name_en, name_ru, task_names, style_keys, groups in DEFAULT_PANELS:
        panel, created = Panel.objects.get_or_create(
            key=key,
            defaults={
                "number": number,
                "name_en": name_en,
                "name_ru": name_ru,
                "criterion_groups": [str(g) for g in groups],
            },
        )
        if created:
            panel.tasks.set(Task.objects.filter(level=0, name_en__in=task_names))
            panel.styles.set(FunctionalStyle.objects.filter(key__in=style_keys))
        panels.append(panel)
    return panels
