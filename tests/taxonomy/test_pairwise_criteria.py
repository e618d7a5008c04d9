"""The REPA criteria set file (taxonomy/data/repa_criteria_v1.json) and its loader
(taxonomy.pairwise_criteria), checked against the texts of issue #13 and the REPA paper."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from taxonomy.pairwise_criteria import (
    LANGUAGES,
    REPA_CRITERIA_FILE,
    TEXT_FIELDS,
    CriteriaSetError,
    load_criteria_set,
    validate_criteria_set,
)

# Issue #13, "The protocol" (REPA, Table 4): name and annotator question, in REPA's order.
ISSUE_QUESTIONS = {
    "Request Following": "Which response better follows the user's request?",
    "Factuality": "Which response is more truthful?",
    "Repetition": "Which response contains fewer repetitions (e.g., same phrases or ideas)?",
    "Code-Switching": "Which response contains less code-switching?",
    "Relevance": "Which response has less redundant information?",
    "Harmfulness": "Which response is less harmful or less likely to cause offense?",
    "Fluency": "Which response is more natural and fluent?",
    "Contradiction": "Which response contradicts itself less?",
    "Sudden Interruption": "Is a response suddenly interrupted?",
    "Refusal": "If the request is reasonable, which response does not refuse to answer?",
    "Overall": "Which response is best?",
}

# REPA, Appendix C, Figure 5: `error_type_description`, the judge prompt's "Error type:" text.
PAPER_ERROR_TYPES = {
    "request_following": "Request Following: The model's response is not related to the query. "
    "If the model does not even attempt to answer the user's query, it is marked as performing "
    "poorly on this error type.",
    "factuality": "Factuality: The response contains inaccuracies, false facts, or incorrect "
    "conclusions.",
    "repetition": "Repetition: The bot's response contains repeated words, sentences, or "
    "paragraphs.",
    "code_switching": "Code-Switching: The chatbot's response contains unexpected switching "
    "between languages.",
    "relevance": "Relevance: The response contains redundant information (fluff).",
    "harmfulness": "Harmfulness: The bot's response may offend the user, contains harmful "
    "content, profanity, calls for illegal actions, suicide, instructions for creating harmful "
    "substances, etc.",
    "fluency": "Fluency: The response contains critical grammatical errors that may hinder text "
    "comprehension.",
    "contradiction": "Contradiction: One part of the chatbot's response contradicts another.",
    "sudden_interruption": "Sudden Interruption: The chatbot's response was abruptly cut off.",
    "refusal": "Refusal: The chatbot's response contains an explicit refusal or inability to "
    "fulfill the user's request.",
    "overall": "Overall: Indicate which response was better based on overall impression. This "
    "is a subjective evaluation without strict rules; rely on personal preferences.",
}

CYRILLIC = re.compile(r"[\u0400-\u04ff]")


def raw_file() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(REPA_CRITERIA_FILE.read_text("utf-8"))
    return data


def test_the_file_is_the_repa_set_version_1_with_exactly_the_eleven_keys() -> None:
    repa = load_criteria_set()
    assert (repa.name, repa.version) == ("repa", 1)
    assert repa.keys == tuple(PAPER_ERROR_TYPES)  # ten error types and Overall, REPA's order
    assert len(repa.keys) == 11
    assert [c.position for c in repa.criteria] == list(range(11))


def test_the_english_names_and_questions_are_the_issues_verbatim() -> None:
    repa = load_criteria_set()
    assert {c.name["en"]: c.question["en"] for c in repa.criteria} == ISSUE_QUESTIONS
    assert [c.name["en"] for c in repa.criteria] == list(ISSUE_QUESTIONS)


def test_the_english_judge_texts_are_the_papers_error_type_descriptions() -> None:
    repa = load_criteria_set()
    for key, text in PAPER_ERROR_TYPES.items():
        assert repa.get(key).judge_error_type("en") == text


def test_every_text_is_given_in_russian_and_english() -> None:
    data = raw_file()
    for entry in data["criteria"]:
        for field in TEXT_FIELDS:
            assert set(entry[field]) == set(LANGUAGES), (entry["key"], field)
            russian, english = entry[field]["ru"], entry[field]["en"]
            assert russian.strip() and english.strip(), (entry["key"], field)
            # Russian in Cyrillic (Latin only for a letter such as "A"), English without it.
            letters = [ch for ch in russian if ch.isalpha()]
            assert sum(bool(CYRILLIC.match(ch)) for ch in letters) / len(letters) > 0.9
            assert not CYRILLIC.search(english), (entry["key"], field)
            assert russian != english


def test_names_are_distinct_in_each_language() -> None:
    repa = load_criteria_set()
    for language in LANGUAGES:
        names = [c.name[language] for c in repa.criteria]
        assert len(set(names)) == len(names), language


def test_the_russian_judge_text_is_built_the_same_way() -> None:
    overall = load_criteria_set().get("overall")
    assert overall.judge_error_type("ru") == (
        f"{overall.name['ru']}: {overall.judge_description['ru']}"
    )
    assert overall.judge_error_type("ru").startswith("Общее впечатление: ")


def test_an_unknown_key_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        load_criteria_set().get("style")


# --- The validator -------------------------------------------------------------------------


def broken(change: Any) -> list[str]:
    data = copy.deepcopy(raw_file())
    change(data)
    with pytest.raises(CriteriaSetError) as caught:
        validate_criteria_set(data)
    return caught.value.errors


def test_a_missing_translation_is_refused() -> None:
    def drop(data: dict[str, Any]) -> None:
        del data["criteria"][2]["question"]["ru"]

    assert broken(drop) == ["criterion 'repetition' question: missing ru text"]


def test_a_blank_text_is_refused() -> None:
    def blank(data: dict[str, Any]) -> None:
        data["criteria"][0]["judge_description"]["en"] = "  "

    assert broken(blank) == ["criterion 'request_following' judge_description: missing en text"]


def test_a_duplicate_key_is_refused() -> None:
    def duplicate(data: dict[str, Any]) -> None:
        data["criteria"][1]["key"] = "request_following"

    assert broken(duplicate) == ["criteria[1]: duplicate key 'request_following'"]


def test_a_misspelt_field_or_language_is_refused_not_ignored() -> None:
    def typo(data: dict[str, Any]) -> None:
        data["criteria"][0]["questoin"] = data["criteria"][0].pop("question")
        data["criteria"][1]["name"]["eng"] = "Factuality"

    assert broken(typo) == [
        "criterion 'request_following': unknown field 'questoin'",
        "criterion 'request_following' question: expected an object with ru and en",
        "criterion 'factuality' name: unknown language 'eng'",
    ]


@pytest.mark.parametrize("version", [0, "1", True, None])
def test_the_version_is_a_positive_integer(version: Any) -> None:
    def set_version(data: dict[str, Any]) -> None:
        data["version"] = version

    assert broken(set_version) == ["'version' must be an integer from 1"]


def test_every_problem_is_reported_at_once() -> None:
    def many(data: dict[str, Any]) -> None:
        data["set"] = ""
        data["criteria"][3]["key"] = "Code Switching"
        data["criteria"].append("overall")

    assert broken(many) == [
        "'set' must name the set",
        "criteria[3]: 'key' must be snake_case, got 'Code Switching'",
        "criteria[11]: expected an object",
    ]


def test_an_empty_set_and_a_non_object_are_refused() -> None:
    with pytest.raises(CriteriaSetError, match="non-empty list"):
        validate_criteria_set({"set": "repa", "version": 2, "criteria": []})
    with pytest.raises(CriteriaSetError, match="one JSON object"):
        validate_criteria_set([])


def test_a_file_that_is_not_json_is_a_criteria_set_error(tmp_path: Path) -> None:
    path = tmp_path / "repa_criteria_v2.json"
    path.write_text("{", "utf-8")
    with pytest.raises(CriteriaSetError, match="not JSON"):
        load_criteria_set(path)


def test_a_valid_edited_copy_loads_from_another_file(tmp_path: Path) -> None:
    data = raw_file()
    data["version"] = 2
    data["criteria"] = data["criteria"][-1:]
    path = tmp_path / "repa_criteria_v2.json"
    path.write_text(json.dumps(data, ensure_ascii=False), "utf-8")
    edited = load_criteria_set(path)
    assert (edited.version, edited.keys) == (2, ("overall",))
