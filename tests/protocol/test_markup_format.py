"""The ПРО//ЧТЕНИЕ markup formats (protocol.markup_format): the inline parser's rules of
section 1.6 on hand-made inputs and the regulations' own examples, the contest JSON, lossless
round trips (hypothesis) and validation."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.markup_classifier import (
    Classifier,
    ErrorType,
    classifier_from_dict,
    load_classifier,
)
from protocol.markup_format import (
    MarkupDocument,
    MarkupFormatError,
    canonical_order,
    default_meta,
    parse_markup,
    write_markup,
)
from protocol.markup_json import read_json, to_json, write_json
from protocol.markup_validation import validate
from protocol.spans import Fragment

CONTEST = load_classifier()


def social() -> Classifier:
    """The codes of the regulations' social-studies examples (not in the grammar classifier)."""
    t = {"class": "О", "group": "error", "name_ru": "x", "subjects": ["social"]}
    return classifier_from_dict(
        {
            "name": "test",
            "version": "1",
            "subjects": {"social": {"aliases": ["обществознание"]}},
            "types": [
                {**t, "code": "ПОНЯТИЕ", "group": "meaning"},
                {**t, "code": "О.теорсвязь", "subtypes": [{"code": "идея", "comment_ru": "x"}]},
                {**t, "code": "С.тема"},
            ],
        }
    )


def span(parsed: object, f: Fragment) -> str:
    text = parsed.text  # type: ignore[attr-defined]
    return text[f.start : f.end] if f.located else ""


def rules(parsed: object) -> list[int]:
    return [w.rule for w in parsed.warnings]  # type: ignore[attr-defined]


# --- the regulations' examples (Appendix 3, 1.2–1.5 and 3.1) ---------------------------------


def test_the_government_error_with_a_correction() -> None:
    for source in (
        "Все удивлялись его (\\* Г.упр \\ силой >> силе \\*).",  # as the markdown writes it
        "Все удивлялись его (* Г.упр \\ силой >> силе *).",
        "Все удивлялись его (\\Г.упр\\ силой>> силе\\).",  # the table 3.1 example
    ):
        p = parse_markup(source)
        assert p.text == "Все удивлялись его силой."
        assert p.warnings == []
        (f,) = p.fragments
        assert (f.start, f.end, span(p, f)) == (19, 24, "силой")
        assert (f.code, f.correction, f.group, f.comment) == ("Г.упр", "силе", "error", "")


def test_an_off_profile_fix() -> None:
    p = parse_markup("Все удивлялись его (\\ИСП\\ силой >> сile\\).")
    (f,) = p.fragments
    assert (f.code, span(p, f), f.correction) == ("ИСП", "силой", "сile")


def test_the_classifier_tables_subtype_between_two_backslashes() -> None:
    p = parse_markup(
        "им (\\Г.слов\\ глаг\\ движает >>движет\\) чувство сострадания; ручейки воды, "
        "(\\Г.слов\\ прич\\ стекаемые >>текущие\\), вниз"
    )
    assert p.text == "им движает чувство сострадания; ручейки воды, стекаемые, вниз"
    assert [(f.code, f.subtype, span(p, f), f.correction) for f in p.fragments] == [
        ("Г.слов", "глаг", "движает", "движет"),
        ("Г.слов", "прич", "стекаемые", "текущие"),
    ]
    assert p.warnings == []


def test_meaning_block_subtype_comment_explanation_and_nesting() -> None:
    c = social()
    sentence = "Деятельность – это процесс целенаправленной активности людей."
    p = parse_markup(
        "(\\*ПОНЯТИЕ\\ Познание - процесс постижения человеком окружающей действительности.\\*)",
        c,
    )
    (f,) = p.fragments
    assert (f.code, f.group, f.start, f.end) == ("ПОНЯТИЕ", "meaning", 0, len(p.text))
    p = parse_markup(f"(\\ О.теорсвязь идея \\ {sentence} \\)", c)
    assert [(f.code, f.subtype, span(p, f)) for f in p.fragments] == [
        ("О.теорсвязь", "идея", sentence)
    ]
    p = parse_markup(
        f"(\\ О.теорсвязь идея\\ {sentence}\n\n:: Здесь следовало бы рассмотреть "
        "особенности процесса познания. \\)",
        c,
    )
    (f,) = p.fragments
    assert f.explanation == "Здесь следовало бы рассмотреть особенности процесса познания."
    assert p.text == sentence
    p = parse_markup(
        f"(\\* ПОНЯТИЕ \\ (\\ О.теорсвязь \\ {sentence} \\ Понятие не связано с основной "
        "идеей. \\) \\*)",
        c,
    )
    outer, inner = p.fragments
    assert p.text == sentence and p.warnings == []
    assert (outer.code, outer.start, outer.end) == ("ПОНЯТИЕ", 0, len(sentence))
    assert (inner.code, inner.start, inner.end) == ("О.теорсвязь", 0, len(sentence))
    assert inner.comment == "Понятие не связано с основной идеей." and outer.comment == ""


def test_whole_text_errors_have_no_span() -> None:
    c = social()
    p = parse_markup(
        "Текст эссе.\n(* С.тема \\*)\n(* С.тема \\:: Тема осталась нераскрытой, для раскрытия "
        "темы следовало ... *)",
        c,
    )
    assert p.text == "Текст эссе."
    assert [(f.code, f.start, f.end) for f in p.fragments] == [
        ("С.тема", None, None),
        ("С.тема", None, None),
    ]
    assert p.fragments[1].explanation.startswith("Тема осталась нераскрытой")
    assert p.warnings == []


def test_the_metadata_example_and_multi_line_values() -> None:
    p = parse_markup(
        "Тема: (\\* В чём заключаются сила и слабость базаровского нигилизма? \\*)\n"
        "Класс: 11\nГод: 2020\nПредмет: литература\nТест: егэ тренировка\n"
        "Эксперт: СеверусСнейп2020\n"
        "Исходный текст: (* Первый абзац.\n\nВторой абзац. *)\n"
        "К5: 2\nK1: 1\nЛиния:\n\nТекст."
    )
    assert p.meta == {
        **default_meta(),
        "theme": "В чём заключаются сила и слабость базаровского нигилизма?",
        "class": "11",
        "year": 2020,
        "subject": "литература",
        "test": "егэ тренировка",
        "expert": "СеверусСнейп2020",
        "taskText": "Первый абзац.\n\nВторой абзац.",
    }
    assert p.document.criteria == {"К5": 2, "К1": 1}  # Latin K read as К
    assert p.text == "Текст." and p.warnings == []


def test_a_first_paragraph_with_a_colon_is_text_not_a_header() -> None:
    p = parse_markup("Автор пишет: всё хорошо.\n\nВторой абзац.")
    assert p.text == "Автор пишет: всё хорошо.\n\nВторой абзац."
    assert p.meta == default_meta()


# --- the eight rules of section 1.6 -------------------------------------------------------------


def test_rule_1_unknown_header_field_is_ignored() -> None:
    p = parse_markup("Тема: сила\nЦвет: синий\n\nТекст.")
    assert p.meta["theme"] == "сила" and "Цвет" not in str(p.meta)
    assert rules(p) == [1] and (p.warnings[0].line, p.warnings[0].column) == (2, 1)


def test_rule_2_unknown_code_or_forgotten_backslash_starts_the_text() -> None:
    p = parse_markup("Все удивлялись его (\\ Г.упр силой >> силе \\).")
    (f,) = p.fragments
    assert (f.code, span(p, f), f.correction) == ("Г.упр", "силой", "силе")
    assert rules(p) == [2] and p.warnings[0].position == len("Все удивлялись его (\\ Г.упр ")
    p = parse_markup("Все удивлялись его (\\ Г.упп \\ силой \\).")
    (f,) = p.fragments
    # The regulations' action taken literally: the unknown code becomes the fragment's text.
    assert (f.code, span(p, f), f.comment) == ("", "Г.упп", "силой")
    assert sorted(rules(p)) == [2, 3]


def test_rule_3_missing_code_gives_an_empty_code() -> None:
    p = parse_markup("Все удивлялись его (\\ \\ силой \\).")
    (f,) = p.fragments
    assert (f.code, span(p, f)) == ("", "силой")
    assert rules(p) == [3]


def test_rule_4_unclosed_bracket_is_closed_at_the_end() -> None:
    p = parse_markup("Все удивлялись (\\ Г.упр \\ его силой.")
    (f,) = p.fragments
    assert span(p, f) == "его силой." and p.text == "Все удивлялись его силой."
    assert rules(p) == [4]


def test_rule_5_stray_closing_bracket_is_ignored() -> None:
    p = parse_markup("Все удивлялись *) его силой \\).")
    assert p.text == "Все удивлялись  его силой ." and p.fragments == []
    assert rules(p) == [5, 5]


def test_rule_6_mismatched_bracket_is_taken_as_matching() -> None:
    p = parse_markup("Все удивлялись его (* Г.упр \\ силой \\).")
    (f,) = p.fragments
    assert span(p, f) == "силой" and rules(p) == [6]


def test_rule_7_fix_without_correction_is_ignored() -> None:
    p = parse_markup("Все удивлялись его (\\ИСП\\ силой\\).")
    assert p.fragments == [] and p.text == "Все удивлялись его силой."
    assert rules(p) == [7]
    # Only the fix is dropped when it shares the bracket with another code.
    p = parse_markup("Все удивлялись его (\\ИСП Г.упр\\ силой\\).")
    assert [f.code for f in p.fragments] == ["Г.упр"] and rules(p) == [7]


def test_rule_8_altered_original_text_is_a_warning() -> None:
    original = "Все удивлялись его силой."
    assert rules(parse_markup("Все удивлялись его (\\Г.упр\\ силой\\).", original=original)) == []
    p = parse_markup("Все удивлялись ему (\\Г.упр\\ силой\\).", original=original)
    assert rules(p) == [8] and p.warnings[0].position == len("Все удивлялись е")
    assert len(p.fragments) == 1  # a warning only: the markup is kept


def test_codes_are_case_insensitive_and_a_bracket_may_hold_two_types() -> None:
    p = parse_markup("его (\\ г.УПР \\ силой \\) и (\\ P.знач Г.упр упр \\ умом \\)")
    assert [(f.code, f.subtype, span(p, f)) for f in p.fragments] == [
        ("г.УПР", "", "силой"),
        ("P.знач", "", "умом"),
        ("Г.упр", "упр", "умом"),
    ]
    assert p.warnings == []


def test_nested_spans_strip_only_their_own_edges() -> None:
    p = parse_markup("а (* Р.знач \\ слово (\\ Р.прост \\ вот \\) тут \\ коммент # t1 *) б")
    outer, inner = p.fragments
    assert p.text == "а слово вот тут б"
    assert (span(p, outer), span(p, inner)) == ("слово вот тут", "вот")
    assert (outer.comment, outer.tag) == ("коммент", "t1")
    p = parse_markup("а (* Р.знач \\ слово (\\ Р.прост \\ вот \\) *) б")
    outer, inner = p.fragments
    assert (span(p, outer), span(p, inner)) == ("слово вот", "вот")


# --- JSON ----------------------------------------------------------------------------------------

# The regulations' example (section 2), its two printed pieces joined into one document.
REGULATIONS_JSON = """
{
  "meta": {
    "subject": "литература",
    "test": "егэ тренировка",
    "category": null,
    "year": 2017,
    "class": "11",
    "theme": "Проблема преодоления страха в обычной, мирной жизни",
    "taskText": "Выдержка из текста Ф.А.Вигдоровой"
  },
"selections": [
    {"id": 424, "tag": "", "type": "Р.прост", "group": "error", "comment": "", "subtype": "",
     "correction": "", "explanation": "", "endSelection": 211, "startSelection": 53},
    {"id": 529, "tag": "", "type": "ИСП", "group": "error", "comment": "", "subtype": "",
     "correction": "Текст correction", "explanation": "", "endSelection": 447,
     "startSelection": 330},
    {"id": 530, "tag": "", "type": "АРГУМЕНТ", "group": "meaning", "comment": "", "subtype": "",
     "correction": "", "explanation": "Тест explanation", "endSelection": 627,
     "startSelection": 523}
],
"text": "@TEXT@"
}
""".replace(
    "@TEXT@",
    "Действительно ли, одним из самых тяжёлых испытаний в жизни человека является испытание "
    "страхом? В предложенном для анализа тексте автор поднимает проблему... ",
)


def test_the_regulations_json_example_parses() -> None:
    doc = read_json(REGULATIONS_JSON)
    assert doc.meta["year"] == 2017 and doc.meta["category"] == "" and doc.meta["uuid"] == ""
    assert [(f.code, f.group, f.start, f.end) for f in doc.fragments] == [
        ("Р.прост", "error", 53, 211),
        ("ИСП", "error", 330, 447),
        ("АРГУМЕНТ", "meaning", 523, 627),
    ]
    assert doc.fragments[1].correction == "Текст correction"
    assert doc.fragments[2].explanation == "Тест explanation"
    # The printed text is cut short ("..."), so the spans lie beyond it: validation says so,
    # and nothing else (every code is allowed in literature essays, the fix has a correction).
    assert {i.kind for i in validate(doc)} == {"span_outside_text"}


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("text"), "text"),
        (lambda d: d.update(text=5), "text"),
        (lambda d: d.pop("meta"), "meta"),
        (lambda d: d["meta"].update(year="2017"), "meta.year"),
        (lambda d: d["meta"].update(theme=["x"]), "meta.theme"),
        (lambda d: d.update(selections={}), "selections"),
        (lambda d: d["selections"].append(3), "selections[3]"),
        (lambda d: d["selections"][1].update(startSelection="330"), "selections[1].startSelection"),
        (lambda d: d["selections"][1].update(startSelection=True), "selections[1].startSelection"),
        (lambda d: d["selections"][0].update(endSelection=None), "selections[0].endSelection"),
        (lambda d: d["selections"][0].update(endSelection=10), "selections[0].endSelection"),
        (lambda d: d["selections"][0].update(startSelection=-1), "selections[0].startSelection"),
        (lambda d: d["selections"][2].pop("type"), "selections[2].type"),
        (lambda d: d["selections"][2].update(group="смысл"), "selections[2].group"),
        (lambda d: d["selections"][2].update(id="530"), "selections[2].id"),
        (lambda d: d["selections"][2].update(comment=1), "selections[2].comment"),
        (lambda d: d.update(criteria={"К1": 1}), "criteria"),
        (lambda d: d.update(criteria=[1, "2"]), "criteria[1]"),
        (lambda d: d.update(criteria=[{"name": "X", "score": 1}]), "criteria[0].name"),
    ],
)
def test_malformed_json_names_the_field(mutate: object, field: str) -> None:
    data = json.loads(REGULATIONS_JSON)
    mutate(data)  # type: ignore[operator]
    with pytest.raises(MarkupFormatError) as error:
        read_json(data)
    assert error.value.field == field and isinstance(error.value, ValueError)
    assert str(error.value).startswith(field)


def test_not_json_at_all() -> None:
    with pytest.raises(MarkupFormatError, match="not JSON"):
        read_json("{")
    with pytest.raises(MarkupFormatError):
        read_json("[]")


def test_criteria_as_plain_numbers_and_whole_text_selections() -> None:
    data = json.loads(REGULATIONS_JSON)
    data["criteria"] = [1, None, 2]
    data["selections"] = [{"type": "Р.бедн", "group": "error"}]
    doc = read_json(data)
    assert doc.criteria == {"К1": 1, "К3": 2}
    assert doc.fragments == [Fragment(None, None, "Р.бедн")]
    back = to_json(doc)
    assert back["criteria"] == [{"name": "К1", "score": 1}, {"name": "К3", "score": 2}]
    assert back["selections"][0]["startSelection"] is None and back["selections"][0]["id"] == 1


# --- the inline writer ---------------------------------------------------------------------------


def test_the_writer_alternates_brackets_and_puts_whole_text_errors_last() -> None:
    text = "Все удивлялись его силой."
    doc = MarkupDocument(
        text,
        [
            Fragment(15, 24, "Р.знач", comment="к", explanation="п", tag="t"),
            Fragment(19, 24, "Г.упр", "упр", correction="силе", tag="t"),
            Fragment(None, None, "Р.бедн", comment="однообразно"),
        ],
        {**default_meta(), "subject": "русский", "year": 2020},
        {"К9": 1},
    )
    source = write_markup(doc)
    assert source == (
        "Предмет: русский\nГод: 2020\nК9: 1\n\n"
        "Все удивлялись (* Р.знач \\ его (\\ Г.упр упр \\ силой >> силе # t \\) \\ к :: п # t *).\n"
        "(* Р.бедн \\ \\ однообразно *)"
    )
    p = parse_markup(source)
    assert p.document == doc and p.warnings == []


def test_the_writer_refuses_what_the_inline_syntax_cannot_carry() -> None:
    text = "Все удивлялись его силой."
    with pytest.raises(MarkupFormatError) as error:
        write_markup(MarkupDocument(text, [Fragment(4, 18, "Г.упр"), Fragment(15, 24, "Р.знач")]))
    assert error.value.field == "selections[1]"
    with pytest.raises(MarkupFormatError) as error:
        write_markup(MarkupDocument(text, [Fragment(15, 24, "Г.упр", comment="a >> b")]))
    assert error.value.field == "selections[0].comment"
    with pytest.raises(MarkupFormatError) as error:
        write_markup(MarkupDocument(text, [Fragment(14, 24, "Г.упр")]))  # « его силой»
    assert error.value.field == "selections[0].text"
    with pytest.raises(MarkupFormatError) as error:
        write_markup(MarkupDocument("a *) b"))
    assert error.value.field == "text"
    with pytest.raises(MarkupFormatError) as error:
        write_markup(MarkupDocument(text, criteria={"Итог": 3}))
    assert error.value.field == "criteria.Итог"


def test_a_text_that_looks_like_a_header_gets_one() -> None:
    doc = MarkupDocument("Тема: не заголовок.\n\nТекст.")
    source = write_markup(doc)
    assert source.startswith("Тема:\n\n")
    assert parse_markup(source).document == doc


# --- round trips (hypothesis) ------------------------------------------------------------------

_LETTERS = "абвгдежзиABCxyz"
_SEPARATORS = [" ", " ", " ", ", ", ". ", ".\n", ".\n\n", ": ", " (", ") ", " – "]
words = st.text(_LETTERS, min_size=1, max_size=6)
phrases = st.lists(words, min_size=1, max_size=4).map(" ".join)
values = st.one_of(st.just(""), phrases, st.lists(phrases, min_size=2, max_size=3).map("\n".join))


@st.composite
def documents(draw: st.DrawFn) -> MarkupDocument:
    tokens = draw(st.lists(words, min_size=1, max_size=25))
    seps = [draw(st.sampled_from(_SEPARATORS)) for _ in tokens[1:]]
    text, bounds = "", []
    for i, word in enumerate(tokens):
        bounds.append((len(text), len(text) + len(word)))
        text += word + (seps[i] if i < len(seps) else "")
    subject = draw(st.sampled_from(["rus", "русский", "lit", "литература"]))
    allowed = CONTEST.for_subject(subject)
    fragments: list[Fragment] = []
    chosen: list[tuple[int, int]] = []
    for _ in range(draw(st.integers(0, 8))):
        a = draw(st.integers(0, len(bounds) - 1))
        b = draw(st.integers(a, min(a + 4, len(bounds) - 1)))
        s, e = bounds[a][0], bounds[b][1]
        if any(s2 < s < e2 < e or s < s2 < e < e2 for s2, e2 in chosen):
            continue  # fragments nest but never cross
        chosen.append((s, e))
        fragments.append(draw(fragment_at(s, e, allowed)))
    for _ in range(draw(st.integers(0, 2))):
        fragments.append(draw(fragment_at(None, None, allowed)))
    tags = [f.tag for f in fragments if f.tag]
    fragments = [
        f if not f.tag or tags.count(f.tag) > 1 else Fragment(**{**f.__dict__, "tag": ""})
        for f in fragments
    ]
    meta = default_meta()
    for key in ("id", "uuid", "theme", "class", "taskText", "category", "expert", "test"):
        meta[key] = draw(values)
    meta["subject"] = subject
    meta["year"] = draw(st.one_of(st.none(), st.integers(1990, 2030)))
    criteria = draw(
        st.dictionaries(
            st.integers(1, 12).map(lambda n: f"К{n}"),
            st.one_of(st.integers(0, 5), st.sampled_from([0.5, 1.5, 2.5])),
            max_size=4,
        )
    )
    return MarkupDocument(text, canonical_order(fragments), meta, criteria)


@st.composite
def fragment_at(
    draw: st.DrawFn, start: int | None, end: int | None, allowed: list[ErrorType]
) -> Fragment:
    kind = draw(st.sampled_from(allowed))
    subtype = draw(st.sampled_from(["", *(s.code for s in kind.subtypes)]))
    correction = draw(phrases if kind.needs_correction else st.one_of(st.just(""), phrases))
    return Fragment(
        start,
        end,
        kind.code,
        subtype,
        comment=draw(st.one_of(st.just(""), phrases)),
        correction=correction,
        group=kind.group,
        explanation=draw(st.one_of(st.just(""), phrases)),
        tag=draw(st.sampled_from(["", "", "t1", "t2", "42"])),
    )


@settings(max_examples=300, deadline=None)
@given(documents())
def test_round_trips_are_lossless_on_valid_input(doc: MarkupDocument) -> None:
    assert validate(doc) == []
    inline = write_markup(doc)
    parsed = parse_markup(inline, original=doc.text)
    assert parsed.warnings == []
    assert parsed.document == doc
    assert read_json(write_json(doc)) == doc
    # JSON → inline → JSON gives the same JSON.
    assert write_json(parse_markup(write_markup(read_json(write_json(doc)))).document) == (
        write_json(doc)
    )


# --- validation ----------------------------------------------------------------------------------


def kinds(
    doc: MarkupDocument, classifier: Classifier | None = None
) -> list[tuple[str, int | None]]:
    return [(i.kind, i.fragment) for i in validate(doc, classifier)]


TEXT = "Все удивлялись его силой и умом."


def doc_of(*fragments: Fragment, subject: str = "русский") -> MarkupDocument:
    return MarkupDocument(TEXT, list(fragments), {**default_meta(), "subject": subject})


def test_a_valid_markup_has_no_issues() -> None:
    assert (
        kinds(
            doc_of(
                Fragment(4, 24, "Р.знач", tag="a"),
                Fragment(19, 24, "Г.упр", "пфс", tag="a"),
                Fragment(19, 24, "ИСП", correction="силе"),
                Fragment(None, None, "Р.бедн"),
            )
        )
        == []
    )


def test_codes_must_be_known_and_allowed_for_the_subject() -> None:
    assert kinds(doc_of(Fragment(19, 24, "Г.упр"), subject="литература")) == [
        ("code_not_allowed", 0)
    ]
    assert kinds(doc_of(Fragment(19, 24, "Г.нет"))) == [("unknown_code", 0)]
    assert kinds(doc_of(Fragment(19, 24, ""))) == [("missing_code", 0)]
    assert kinds(doc_of(Fragment(19, 24, "Г.упр", "прил"))) == [("unknown_subtype", 0)]
    assert kinds(doc_of(Fragment(19, 24, "Г.упр", group="meaning"))) == [("wrong_group", 0)]
    assert kinds(doc_of(Fragment(19, 24, "Г.упр"), subject="физика")) == [("unknown_subject", None)]


def test_a_fix_needs_a_correction() -> None:
    assert kinds(doc_of(Fragment(19, 24, "ИСП"))) == [("correction_required", 0)]


def test_fragments_nest_but_never_cross() -> None:
    assert kinds(doc_of(Fragment(4, 18, "Г.упр"), Fragment(15, 24, "Р.знач"))) == [("crossing", 1)]
    assert kinds(doc_of(Fragment(15, 24, "Р.знач"), Fragment(4, 18, "Г.упр"))) == [("crossing", 0)]
    assert kinds(doc_of(Fragment(4, 24, "Р.знач"), Fragment(15, 18, "Г.упр"))) == []
    assert kinds(doc_of(Fragment(4, 14, "Р.знач"), Fragment(15, 18, "Г.упр"))) == []


def test_a_tag_links_at_least_two_fragments() -> None:
    assert kinds(doc_of(Fragment(19, 24, "Г.упр", tag="a"))) == [("tag_used_once", 0)]
    assert kinds(
        doc_of(Fragment(19, 24, "Г.упр", tag="a b"), Fragment(0, 3, "Р.знач", tag="a b"))
    ) == [
        ("bad_tag", 0),
        ("bad_tag", 1),
    ]


def test_offsets_lie_within_the_text() -> None:
    assert kinds(doc_of(Fragment(19, 99, "Г.упр"))) == [("span_outside_text", 0)]
    assert kinds(doc_of(Fragment(19, 19, "Г.упр"))) == [("span_outside_text", 0)]
    assert kinds(doc_of(Fragment(-1, 3, "Г.упр"))) == [("span_outside_text", 0)]
    assert kinds(doc_of(Fragment(19, None, "Г.упр"))) == [("bad_span", 0)]
    assert kinds(doc_of(Fragment(18, 24, "Г.упр"))) == [("span_whitespace", 0)]


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from(list("аб Г.упрИСП\\*()::>>#\n")), max_size=60))
def test_the_parser_recovers_from_any_input(source: str) -> None:
    """Whatever the input, the rules of section 1.6 give a document: spans inside the text,
    nested or disjoint, each warning tied to one of the eight rules (0: a header value)."""
    p = parse_markup(source)
    for f in p.fragments:
        assert (f.start is None) == (f.end is None)
        if f.located:
            assert f.start is not None and f.end is not None
            assert 0 <= f.start <= f.end <= len(p.text)
    assert not [i for i in validate(p.document) if i.kind == "crossing"]
    assert all(0 <= w.rule <= 8 for w in p.warnings)
