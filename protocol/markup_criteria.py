"""The criteria an expert scores beside an essay's span markup, per essay type (the classifier's
subject key): code, maximum, name and a short description in Russian and English. The one home
of these names: the markup page, the scores' checks (protocol.markup_scores.ENTERED_CRITERIA)
and any export read them here.

The ПРО//ЧТЕНИЕ «Грамматика» regulations (2020) name the criteria by code and cite the ЕГЭ 2020
demonstration versions for them ([2] Russian, task 27: К1–К12, 24 points; [3] literature,
tasks 17.1–17.4: К1–К5, 14 points); the names and maxima are those versions'. The descriptions
are short readings of them, and say where the regulations compute a criterion from the markup
(sections 3.3 and 3.4: К9, К10 and К5 from the grammar and speech errors, 3.1 and 3.2).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class EssayCriterion:
    code: str
    top: int  # the maximum score
    name_ru: str
    name_en: str
    about_ru: str
    about_en: str

    def name(self, english: bool) -> str:
        return self.name_en if english else self.name_ru

    def about(self, english: bool) -> str:
        return self.about_en if english else self.about_ru


C = EssayCriterion

ESSAY_CRITERIA: dict[str, tuple[EssayCriterion, ...]] = {
    # Сочинение по прочитанному тексту (ЕГЭ 2020, задание 27).
    "rus": (
        C(
            "К1", 1,
            "Формулировка проблем исходного текста",
            "Formulating a problem of the source text",
            "Верно сформулирована одна из проблем исходного текста.",
            "One of the problems the source text raises is formulated correctly.",
        ),
        C(
            "К2", 5,
            "Комментарий к сформулированной проблеме",
            "Commentary on the problem",
            "Два примера-иллюстрации из текста, пояснение к каждому и смысловая связь между ними.",
            "Two illustrating examples from the text, each explained, and the link between them.",
        ),
        C(
            "К3", 1,
            "Отражение позиции автора исходного текста",
            "The source author's position",
            "Верно сформулирована позиция автора по прокомментированной проблеме.",
            "The author's position on the commented problem is stated correctly.",
        ),
        C(
            "К4", 1,
            "Отношение к позиции автора",
            "Attitude to the author's position",
            "Выражено и обосновано своё отношение к позиции автора (согласие или несогласие).",
            "The writer agrees or disagrees with the author's position and gives reasons.",
        ),
        C(
            "К5", 2,
            "Смысловая цельность, речевая связность и последовательность изложения",
            "Coherence, connectedness and logical order",
            "Нет логических ошибок и нарушений абзацного членения текста.",
            "No logical errors, no faults in the division into paragraphs.",
        ),
        C(
            "К6", 2,
            "Точность и выразительность речи",
            "Accuracy and expressiveness of speech",
            "Точность выражения мысли, разнообразие грамматического строя речи.",
            "Thoughts expressed precisely, varied grammatical structure.",
        ),
        C(
            "К7", 3,
            "Соблюдение орфографических норм",
            "Spelling",
            "Орфографические ошибки: чем их больше, тем ниже балл.",
            "Spelling errors: the more there are, the lower the score.",
        ),
        C(
            "К8", 3,
            "Соблюдение пунктуационных норм",
            "Punctuation",
            "Пунктуационные ошибки: чем их больше, тем ниже балл.",
            "Punctuation errors: the more there are, the lower the score.",
        ),
        C(
            "К9", 2,
            "Соблюдение грамматических норм",
            "Grammar",
            "Грамматические ошибки (регламент, 3.1); вычисляется по разметке с учётом объёма.",
            "Grammar errors (regulations, 3.1); computed from the markup and the essay's length.",
        ),
        C(
            "К10", 2,
            "Соблюдение речевых норм",
            "Speech norms",
            "Речевые ошибки (регламент, 3.2); вычисляется по разметке с учётом объёма.",
            "Speech errors (regulations, 3.2); computed from the markup and the essay's length.",
        ),
        C(
            "К11", 1,
            "Соблюдение этических норм",
            "Ethics",
            "В работе нет этических ошибок.",
            "No ethical errors in the essay.",
        ),
        C(
            "К12", 1,
            "Фактологическая точность в фоновом материале",
            "Factual accuracy of background material",
            "Нет фактических ошибок в фоновом материале.",
            "No factual errors in the background material.",
        ),
    ),
    # Сочинение на литературную тему (ЕГЭ 2020, задания 17.1–17.4).
    "lit": (
        C(
            "К1", 3,
            "Соответствие сочинения теме и её раскрытие",
            "Keeping to the topic and developing it",
            "Тема раскрыта глубоко и многосторонне, без подмены темы.",
            "The topic is developed in depth and from several sides, not replaced by another.",
        ),
        C(
            "К2", 3,
            "Привлечение текста произведения для аргументации",
            "Using the literary text as argument",
            "Текст произведения привлечён для аргументации, без подмены анализа пересказом.",
            "The work's text supports the argument; retelling does not replace analysis.",
        ),
        C(
            "К3", 2,
            "Опора на теоретико-литературные понятия",
            "Use of literary theory",
            "Теоретико-литературные понятия используются для анализа произведения.",
            "Terms of literary theory are used to analyse the work.",
        ),
        C(
            "К4", 3,
            "Композиционная цельность и логичность",
            "Compositional unity and logic",
            "Части сочинения логически связаны, мысль развивается последовательно.",
            "The parts are logically linked; the thought develops consistently.",
        ),
        C(
            "К5", 3,
            "Соблюдение речевых норм",
            "Speech norms",
            "Речевые ошибки (регламент, 3.2); вычисляется по разметке с учётом объёма.",
            "Speech errors (regulations, 3.2); computed from the markup and the essay's length.",
        ),
    ),
}  # fmt: skip
