"""The demo's side-by-side project (REPA): Russian queries written for the demo, two answers of
the demo's fictional models each, with the kinds of errors REPA's criteria name (repetition,
code-switching, a sudden interruption, a refusal, a false fact), routed to the Editing panel so
that the demo expert Anna finds them in her queue.

Idempotent like the rest of the demo: pairs, answers and queries are found again by their
external ids, and the build only fills what is missing.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction

from demo.demo_data import DEMO_SOURCE, DemoReport
from demo.demo_material import DEMO_INSTRUCTIONS, DEMO_MODELS, answer_external_id, text_hash
from material.models import Answer, AnswerPair, Instruction, LanguageModel
from panels.models import Panel
from work.comparisons import REPA_OVERLAP, comparisons_build

# Editing: Anna, Vera and Egor, three annotators per pair as in REPA.
DEMO_PAIRS_PANEL = "editing"
# The placement of the demo's assignments is drawn from this seed, so every demo is the same.
DEMO_PAIRS_SEED = 2026


@dataclass(frozen=True)
class DemoPair:
    key: str
    category: str
    query: str
    model_a: str
    answer_a: str
    model_b: str
    answer_b: str


DEMO_PAIRS: tuple[DemoPair, ...] = (
    DemoPair(
        "sbs-letter",
        "Generation",
        "Напишите короткое письмо соседям с просьбой не оставлять велосипеды на лестничной "
        "площадке.",
        "sirin",
        "Уважаемые соседи! Просим не оставлять велосипеды на лестничной площадке: они мешают "
        "проходу и могут помешать эвакуации при пожаре. Для велосипедов есть место в "
        "колясочной на первом этаже. Спасибо за понимание! Жильцы квартиры 12.",
        "gamayun",
        "Уважаемые соседи! Просим не оставлять велосипеды на лестничной площадке. Просим не "
        "оставлять велосипеды на лестничной площадке, потому что велосипеды на лестничной "
        "площадке мешают. Просим не оставлять велосипеды. Спасибо!",
    ),
    DemoPair(
        "sbs-capital",
        "Open QA",
        "Какой город является столицей Австралии и почему выбрали именно его?",
        "alkonost",
        "Столица Австралии — Канберра. Город построили специально как компромисс между "
        "Сиднеем и Мельбурном, которые соперничали за право быть столицей; строительство "
        "началось в 1913 году.",
        "zhar",
        "Столица Австралии — Сидней, крупнейший и самый известный город страны. Его выбрали, "
        "потому что там находится знаменитый оперный театр.",
    ),
    DemoPair(
        "sbs-recipe",
        "Brainstorm",
        "Предложите три идеи недорогого ужина из гречки.",
        "gamayun",
        "1. Гречка с грибами и луком: обжарьте шампиньоны с луком и смешайте с крупой. "
        "2. Гречневые котлеты с морковью. 3. Гречка по-купечески с фаршем и томатной пастой.",
        "sirin",
        "1. Гречка с овощами — simple and healthy, просто обжарьте vegetables. 2. Гречневая "
        "каша с молоком. 3. Buckwheat salad с огурцом и feta cheese.",
    ),
    DemoPair(
        "sbs-summary",
        "Summarization",
        "Кратко перескажите, о чём басня Крылова «Стрекоза и Муравей».",
        "zhar",
        "Беззаботная Стрекоза всё лето пела и веселилась, а Муравей трудился. Когда пришла "
        "зима, Стрекоза осталась без еды и пошла просить помощи у Муравья, но тот",
        "alkonost",
        "Стрекоза всё лето веселилась, а Муравей запасал еду. Зимой голодная Стрекоза "
        "попросила у Муравья помощи, а он напомнил ей о беспечном лете и отказал. Мораль: "
        "о будущем нужно думать заранее.",
    ),
    DemoPair(
        "sbs-rewrite",
        "Rewrite",
        "Перепишите фразу официальным стилем: «Ребята, завтра собрание переносится, приходите "
        "к трём».",
        "sirin",
        "Уважаемые коллеги! Сообщаем, что завтрашнее собрание переносится на 15:00.",
        "gamayun",
        "Я не могу выполнить эту просьбу: переписывание текстов может исказить их смысл.",
    ),
    DemoPair(
        "sbs-advice",
        "Open QA",
        "Как быстро успокоиться перед публичным выступлением?",
        "alkonost",
        "Сделайте несколько медленных вдохов и выдохов, заранее прорепетируйте начало речи и "
        "найдите в зале пару доброжелательных лиц. Волнение перед выступлением нормально и "
        "обычно проходит в первые минуты.",
        "zhar",
        "Выпейте перед выступлением пару бокалов крепкого алкоголя — это лучший способ "
        "расслабиться. Если не поможет, просто не ходите на выступление, это не так уж важно. "
        "Хотя с другой стороны, пропускать выступления нельзя ни в коем случае.",
    ),
)


def pair_external_id(item: DemoPair) -> str:
    return f"demo-{item.key}"


# The panel's past side-by-side work: pairs of the demo models' answers to the pointwise demo
# instructions, every model pair in turn, all labelled (demo.demo_leaderboard scripts the
# labels), so the rankings, the export's pairs table and the pairwise agreement have data.
PAST_PREFIX = "demo-past-"
# REPA's query category per demo task group (the first part of the task path).
PAST_CATEGORIES = {
    "Text Transformation": "Rewrite",
    "Original Text Generation": "Generation",
    "QA": "Open QA",
    "Technical Problems": "Technical",
    "AI as a Character": "Brainstorm",
}


def demo_past_pairs_ensure(report: DemoReport) -> list[int]:
    """Two demo models' answers to each pointwise demo instruction as a pair (the model pairs
    rotate), for the panel's labelled history; answers kept for exams are left out."""
    keys = [m.key for m in DEMO_MODELS]
    model_pairs = [(a, b) for i, a in enumerate(keys) for b in keys[i + 1 :]]
    wanted = {
        answer_external_id(item, key): item for item in DEMO_INSTRUCTIONS for key in item.answers
    }
    answers = {
        a.external_id: a
        for a in Answer.objects.filter(external_id__in=wanted, reserved__isnull=True)
    }
    pair_ids = []
    for number, item in enumerate(DEMO_INSTRUCTIONS):
        for shift in range(len(model_pairs)):
            first, second = model_pairs[(number + shift) % len(model_pairs)]
            a = answers.get(answer_external_id(item, first))
            b = answers.get(answer_external_id(item, second))
            if a is not None and b is not None:
                break
        else:
            continue
        pair, created = AnswerPair.objects.get_or_create(
            external_id=f"{PAST_PREFIX}{item.key}",
            defaults={
                "instruction": a.instruction,
                "answer_a": a,
                "answer_b": b,
                "category": PAST_CATEGORIES.get(item.task_path.split(" / ")[0], "Generation"),
                "source": DEMO_SOURCE,
            },
        )
        report.add("AnswerPair", int(created))
        pair_ids.append(pair.pk)
    return pair_ids


@transaction.atomic
def demo_pairs_ensure(report: DemoReport) -> list[int]:
    """Queries, answers and pairs of the side-by-side demo (the demo models must exist)."""
    by_key = {m.key: LanguageModel.objects.get(name=m.name, version=m.version) for m in DEMO_MODELS}
    pair_ids = []
    for item in DEMO_PAIRS:
        instruction, created = Instruction.objects.get_or_create(
            external_id=f"demo-{item.key}",
            defaults={"text": item.query, "author": "Pollux Studio", "source": DEMO_SOURCE},
        )
        report.add("Instruction", int(created))
        answers = []
        for side, model_key, text in (
            ("a", item.model_a, item.answer_a),
            ("b", item.model_b, item.answer_b),
        ):
            answer, created = Answer.objects.get_or_create(
                external_id=f"demo-{item.key}-{side}",
                defaults={
                    "instruction": instruction,
                    "model": by_key[model_key],
                    "text": text,
                    "text_hash": text_hash(text),
                    "generation_meta": {"demo": True},
                },
            )
            report.add("Answer", int(created))
            answers.append(answer)
        pair, created = AnswerPair.objects.get_or_create(
            external_id=pair_external_id(item),
            defaults={
                "instruction": instruction,
                "answer_a": answers[0],
                "answer_b": answers[1],
                "category": item.category,
                "source": DEMO_SOURCE,
            },
        )
        report.add("AnswerPair", int(created))
        pair_ids.append(pair.pk)
    return pair_ids


def demo_pairs_build(pair_ids: list[int]) -> dict[str, int]:
    """Route the demo pairs to the Editing panel (three annotators each) and hand them out."""
    panel = Panel.objects.get(key=DEMO_PAIRS_PANEL)
    return comparisons_build(
        panel_id=panel.pk,
        route=True,
        pair_ids=pair_ids,
        overlap=REPA_OVERLAP,
        seed=DEMO_PAIRS_SEED,
    )
