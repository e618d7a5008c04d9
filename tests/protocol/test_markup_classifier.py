"""The shipped span-markup classifiers (protocol.markup_classifier) against the regulations'
tables (Appendix 3, 3.1–3.4) and the REPA paper's ten error types."""

from __future__ import annotations

import pytest

from protocol.markup_classifier import (
    FIX_CODE,
    available_classifiers,
    classifier_from_dict,
    load_classifier,
)

# The issue's list (#14), which is the regulations' tables 3.1 and 3.2.
GRAMMAR = {
    "Г.слов": {"словообр", "сущ", "прил", "числ", "мест", "глаг", "прич", "деепр"},
    "Г.согл": set(),
    "Г.упр": {"упр", "сущ", "пфс"},
    "Г.сказ": {"подл", "спосвыр"},
    "Г.однор": set(),
    "Г.деепр": set(),
    "Г.прич": set(),
    "Г.сложн": set(),
    "Г.смешен": set(),
    "Г.границ": set(),
    "Г.видовор": set(),
    "Г.эллипс": {"проп", "элл"},
    "Г.частиц": {"част", "отрыв"},
}
SPEECH = {
    "Р.знач": {"несвой", "термин"},
    "Р.прост": set(),
    "Р.мест": set(),
    "Р.стил": {"стил", "эмоц", "эпохи", "устар", "неол", "канц", "жарг", "флог"},
    "Р.прист": {"прист"},
    "Р.суфф": {"суфф"},
    "Р.оним": {"син", "пар", "ант", "фрлог"},
    "Р.сочет": set(),
    "Р.лишн": {"лишн", "плеон", "избыт", "расщ", "параз", "сравн"},
    "Р.тавт": set(),
    "Р.повтор": set(),
    "Р.бедн": set(),
    "Р.неполн": set(),
    "Р.двусм": {"двусм", "омон"},
    "Р.шаблон": {"шаблон", "употр", "неум"},
}


def test_the_contest_classifier_holds_every_type_and_subtype_of_the_regulations() -> None:
    c = load_classifier("prochtenie", "2020")
    errors = {t.code: {s.code for s in t.subtypes} for t in c.types if t.klass in ("Г", "Р")}
    assert errors == GRAMMAR | SPEECH
    for t in c.types:
        assert t.name_ru and t.name_en
        # Every type has its standard comment: its own, or one per subtype.
        assert t.comment_ru or all(s.comment_ru for s in t.subtypes)
        assert t.subtypes or t.comment_ru or t.group == "meaning"
    assert c.get("Г.упр").standard_comment("пфс").startswith("Неверный выбор полной")  # type: ignore[union-attr]
    assert c.get("Г.согл").standard_comment() == "Нарушение норм согласования."  # type: ignore[union-attr]


def test_codes_are_found_case_insensitively_and_with_a_latin_p() -> None:
    c = load_classifier()
    assert c.get("г.УПР") is c.get("Г.упр") is not None
    assert c.get("P.знач") is c.get("Р.знач") is not None  # Latin P
    assert c.get("Г.упр").subtype("ПФС") is not None  # type: ignore[union-attr]
    assert c.get("Г.неттакого") is None and "Г.неттакого" not in c
    assert "исп" in c


def test_subjects_and_criteria_follow_sections_3_3_and_3_4() -> None:
    c = load_classifier()
    # Grammar: Russian essays (К9) and free Russian essays; speech: Russian (К10), literature (К5).
    assert c.allowed("Г.упр", "русский") and c.allowed("Г.упр", "rus-free")
    assert not c.allowed("Г.упр", "литература") and not c.allowed("Г.упр", "hist")
    assert c.allowed("Р.знач", "lit") and c.allowed("Р.знач", "rus")
    assert not c.allowed("Р.знач", "обществознание")
    assert c.criterion("Г.упр", "rus") == "К9"
    assert c.criterion("Р.знач", "русский") == "К10"
    assert c.criterion("Р.знач", "литература") == "К5"
    assert c.criterion("Г.упр", "rus-free") is None  # no formula in the regulations
    assert c.subject_key("Литература") == "lit" and c.subject_key("физика") is None
    assert not c.allowed("Г.упр", "физика")


def test_the_off_profile_fix_and_the_meaning_blocks() -> None:
    c = load_classifier()
    fix = c.get(FIX_CODE)
    assert fix is not None and fix.needs_correction and not fix.scored and not fix.criteria
    assert all(c.allowed(FIX_CODE, s) for s in ("rus", "lit", "social", "hist", "eng"))
    assert c.group("ПОНЯТИЕ") == c.group("аргумент") == "meaning"
    assert c.group("Г.упр") == "error"
    assert c.allowed("ПОНЯТИЕ", "обществознание") and c.allowed("АРГУМЕНТ", "литература")
    assert [t.code for t in c.for_subject("lit")][-2:] == [FIX_CODE, "АРГУМЕНТ"]


def test_the_repa_classifier_has_the_ten_error_types_of_the_paper() -> None:
    c = load_classifier("repa", "2025")
    assert [c.criterion(t.code, "llm") for t in c.types] == [
        "request_following",
        "factuality",
        "repetition",
        "code_switching",
        "relevance",
        "harmfulness",
        "fluency",
        "contradiction",
        "sudden_interruption",
        "refusal",
    ]
    assert all(c.allowed(t.code, "ответ модели") for t in c.types)
    assert c.get("llm.FACT") is c.get("LLM.fact") is not None
    assert not c.allowed("LLM.fact", "rus")


def test_versions_are_listed_and_an_unknown_one_is_an_error() -> None:
    assert ("prochtenie", "2020") in available_classifiers()
    assert ("repa", "2025") in available_classifiers()
    with pytest.raises(LookupError, match="prochtenie"):
        load_classifier("prochtenie", "1999")


def test_a_classifier_rejects_duplicate_codes_and_unknown_groups() -> None:
    base = {"name": "x", "version": "1", "subjects": {}}
    t = {"code": "A.b", "class": "A", "group": "error", "name_ru": "а"}
    with pytest.raises(ValueError, match="duplicate"):
        classifier_from_dict({**base, "types": [t, {**t, "code": "a.B"}]})
    with pytest.raises(ValueError, match="group"):
        classifier_from_dict({**base, "types": [{**t, "group": "other"}]})
