"""Rules of instruction writing (POLLUX §3.2): quotas, their spread over subtypes, the review
state machine, the authoring form's checks, and the stylistic-device vocabulary.

Pure: no model, no query. The authoring app stores slots and calls these rules.

Sources (../shared/references/pollux-paper.md):
- "Each expert panel wrote 50 (10/15/25 for easy/medium/hard complexity levels, respectively)
  instructions for each of the 35 major task groups"; footnote 9: "STEM and three of the
  programming code-related tasks have 125 instructions as of 25 instructions per discipline or
  language accordingly ... code-related problems are split into ... 8/9/8 for ... easy/medium/hard
  levels of complexity". So a code group is 5 × (8/9/8) = 40/45/40. For STEM the footnote splits
  12/13 by high school / university, a dimension the catalogue does not have; we give it the
  same 40/45/40 (documented choice; the plan is editable).
- "Inside the task groups, instructions were uniformly allocated between the respective subgroups
  (the same holds for further divisions)": `spread` divides a count over the children of each
  node in turn, never over the leaves directly (a subtype with three sub-subtypes gets the same
  share as a leaf sibling).
- "Each expert panel wrote 50 ... for each of the 35 major task groups", and "All 2,100 texts":
  a group several panels own (Extract: five) is still one group of 50, not 50 per panel. Its
  count is spread down the tree once and each subtype's share goes to the panel owning it
  (`owner_shares`; who owns a subtype is the routing's rule, "resolved according to the
  functional style"); a panel's own count is spread over its part of the tree (`prune`).
- Review: "Instructions that did not align with the definitions of the corresponding task
  hierarchy or complexity levels were returned to panels for revision (16%)"; "additionally
  reviewed by the editorial panel for spelling errors and misprints"; "The originality of
  instructions was further verified by panel supervisors."
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

COMPLEXITIES = ("easy", "medium", "hard")
DEFAULT_QUOTA = {"easy": 10, "medium": 15, "hard": 25}
# STEM and the three code groups (footnote 9): 25 per discipline or language, 8/9/8 each.
LARGE_QUOTA = {"easy": 40, "medium": 45, "hard": 40}
LARGE_GROUPS = frozenset({"STEM exercises", "Code creation", "Code analysis", "Code modification"})

# POLLUX: 1.6 % of instructions exceed 7,000 characters; the form allows long texts, but a bound
# keeps one autosave from being a denial of service.
MAX_TEXT_CHARS = 100_000
MAX_REFERENCE_CHARS = 100_000
MAX_COMMENT_CHARS = 10_000
MAX_DEVICE_COUNT = 1_000
# POLLUX: about 120 min per instruction under 2,500 characters, 150 above.
LONG_TEXT_CHARS = 2_500


def default_quota(task_group_name: str) -> dict[str, int]:
    """POLLUX's quota by complexity for one of the 35 task groups (English name)."""
    return dict(LARGE_QUOTA if task_group_name in LARGE_GROUPS else DEFAULT_QUOTA)


@dataclass(frozen=True)
class Node:
    """A node of the task tree as `spread` sees it: its key and its children (leaves have none)."""

    key: Any
    children: tuple[Node, ...] = ()


def split_even(count: int, parts: int) -> list[int]:
    """`count` split into `parts` shares differing by at most one, the larger ones first (the
    catalogue's order decides who gets the remainder: deterministic, so a re-plan is stable)."""
    if parts <= 0:
        return []
    base, extra = divmod(count, parts)
    return [base + (1 if i < extra else 0) for i in range(parts)]


def spread(node: Node, count: int) -> dict[Any, int]:
    """`count` instructions of a task group allocated uniformly down its tree to the leaves:
    at each node the count splits evenly over the node's children (the paper's "the same holds
    for further divisions"). A leaf given 0 is still listed, so the plan shows it."""
    if not node.children:
        return {node.key: count}
    out: dict[Any, int] = {}
    for child, share in zip(node.children, split_even(count, len(node.children)), strict=True):
        out.update(spread(child, share))
    return out


def prune(node: Node, keep: AbstractSet[Any]) -> Node | None:
    """The part of the tree that leads to the leaves in `keep` (None when there is none): a
    panel's own subtypes of a task group several panels own."""
    if not node.children:
        return node if node.key in keep else None
    kids = tuple(k for k in (prune(child, keep) for child in node.children) if k is not None)
    return Node(node.key, kids) if kids else None


def owner_shares(node: Node, count: int, owner_of: Mapping[Any, Any]) -> dict[Any, int]:
    """How a task group's `count` divides between the panels owning it: the count is spread
    down the whole tree as if one panel owned it, and each leaf's share goes to its owner.
    The shares are whole numbers that add up to `count` exactly (the paper's 50 per group
    stays 50 however many panels write it)."""
    shares: dict[Any, int] = {}
    for leaf, share in spread(node, count).items():
        shares[owner_of[leaf]] = shares.get(owner_of[leaf], 0) + share
    return shares


# --- the review state machine ---------------------------------------------------------------

DRAFT = "draft"
SUBMITTED = "submitted"
RETURNED = "returned"
EDITING = "editing"
ORIGINALITY = "originality"
ACCEPTED = "accepted"
STATES = (DRAFT, SUBMITTED, RETURNED, EDITING, ORIGINALITY, ACCEPTED)

# (state, action) -> next state. There is no other way to move: no skipped step.
TRANSITIONS: dict[tuple[str, str], str] = {
    (DRAFT, "submit"): SUBMITTED,
    (RETURNED, "submit"): SUBMITTED,
    (SUBMITTED, "accept"): EDITING,
    (SUBMITTED, "return"): RETURNED,
    (EDITING, "proofread"): ORIGINALITY,
    (ORIGINALITY, "original"): ACCEPTED,
    (ORIGINALITY, "not_original"): RETURNED,
}
ACTIONS = tuple(sorted({action for _, action in TRANSITIONS}))
# States in which the author may change the text (an autosave elsewhere is refused).
AUTHOR_EDITABLE = (DRAFT, RETURNED)


class TransitionError(ValueError):
    pass


def next_state(state: str, action: str) -> str:
    """The state after `action`; TransitionError names both when the move does not exist."""
    try:
        return TRANSITIONS[(state, action)]
    except KeyError:
        allowed = sorted(a for (s, a) in TRANSITIONS if s == state)
        raise TransitionError(
            f"cannot {action} an instruction that is {state}"
            + (f" (possible: {', '.join(allowed)})" if allowed else "")
        ) from None


def round_verdict(verdicts: Sequence[str]) -> str:
    """A review round's outcome from its reviewers' verdicts: accepted only when every reviewer
    accepts (a double-reviewed instruction returned by one reviewer goes back to its author)."""
    if not verdicts:
        raise ValueError("a round without a review has no verdict")
    bad = [v for v in verdicts if v not in ("accept", "return")]
    if bad:
        raise ValueError(f"unknown review verdict {bad[0]!r}")
    return "accept" if all(v == "accept" for v in verdicts) else "return"


def needs_double_review(slot_id: int, round_no: int, share: float) -> bool:
    """Whether this round of this slot is in the double-reviewed sample: a fixed hash of
    (slot, round) against the campaign's share, so the sample is reproducible and the author
    cannot steer it."""
    if share <= 0:
        return False
    if share >= 1:
        return True
    # Knuth's multiplicative hash, spread over [0, 1): no randomness to record.
    h = ((slot_id * 2_654_435_761) ^ (round_no * 40_503)) % 4_294_967_296
    return h / 4_294_967_296 < share


def expected_minutes(text: str) -> int:
    """POLLUX's average writing time for an instruction of this length (for the dashboard)."""
    return 150 if len(text) > LONG_TEXT_CHARS else 120


# --- the authoring form ------------------------------------------------------------------------


def draft_errors(fields: Mapping[str, Any], *, submitting: bool) -> dict[str, str]:
    """Field errors of an instruction draft. An autosave accepts an incomplete draft (only
    types and bounds are checked); submitting requires the text and the functional style."""
    errors: dict[str, str] = {}
    text = fields.get("text", "")
    if not isinstance(text, str):
        errors["text"] = _("must be text")
    elif len(text) > MAX_TEXT_CHARS:
        errors["text"] = _("is %(len_text)s characters long; at most %(max_text_chars)s") % {
            "len_text": format(len(text), ","),
            "max_text_chars": format(MAX_TEXT_CHARS, ","),
        }
    elif "\x00" in text:
        errors["text"] = _("contains a NUL character")
    elif submitting and not text.strip():
        errors["text"] = _("is required to submit")
    reference = fields.get("reference_answer", "")
    if not isinstance(reference, str):
        errors["reference_answer"] = _("must be text")
    elif len(reference) > MAX_REFERENCE_CHARS:
        errors["reference_answer"] = _("is longer than %(max_reference_chars)s characters") % {
            "max_reference_chars": format(MAX_REFERENCE_CHARS, ",")
        }
    elif "\x00" in reference:
        errors["reference_answer"] = _("contains a NUL character")
    if submitting and not fields.get("style"):
        errors["style"] = _("is required to submit")
    devices = fields.get("devices", {})
    problem = devices_problem(devices)
    if problem:
        errors["devices"] = problem
    return errors


def draft_fields(post: Mapping[str, Any]) -> dict[str, Any]:
    """The authoring form's fields from a POST (or JSON): devices as `device-<key>` counts."""
    devices: dict[str, Any] = {}
    for key, value in post.items():
        if key.startswith("device-") and str(value).strip() not in ("", "0"):
            name = key[len("device-") :]
            try:
                devices[name] = int(str(value).strip())
            except ValueError:
                devices[name] = str(value)
    return {
        "text": post.get("text", ""),
        "reference_answer": post.get("reference_answer", ""),
        "style": post.get("style") or None,
        "ethics_flag": str(post.get("ethics_flag", "")).lower() in ("1", "on", "true", "yes"),
        "devices": devices,
        "seconds": post.get("seconds", 0),
    }


def devices_problem(devices: Any) -> str:
    """Why a {device: count} mapping is refused ("" when it is fine)."""
    if not isinstance(devices, Mapping):
        return _("must map each stylistic device to its count")
    for name, count in devices.items():
        if name not in DEVICE_KEYS:
            return _("unknown stylistic device %(name)s") % {"name": repr(name)}
        if isinstance(count, bool) or not isinstance(count, int):
            return _("the count of %(name)s must be a whole number") % {"name": name}
        if not 1 <= count <= MAX_DEVICE_COUNT:
            return _("the count of %(name)s must be between 1 and %(max_device_count)s") % {
                "name": name,
                "max_device_count": MAX_DEVICE_COUNT,
            }
    return ""


# Appendix H.2, Figure 10: stylistic devices and lexical-richness aspects (English, Russian).
STYLISTIC_DEVICES: tuple[tuple[str, str, str], ...] = (
    ("allegory", "Allegory", "Аллегория"),
    ("alliteration", "Alliteration", "Аллитерация"),
    ("allusion", "Allusion", "Аллюзия"),
    ("alogism", "Alogism", "Алогизм"),
    ("amplification", "Amplification", "Амплификация"),
    ("anaphora", "Anaphora", "Анафора"),
    ("antithesis", "Antithesis", "Антитеза"),
    ("antiphrasis", "Antiphrasis", "Антифразис"),
    ("application", "Application", "Аппликация"),
    ("apocope", "Apocope", "Апокопа"),
    ("aposiopesis", "Aposiopesis", "Умолчание"),
    ("arrhythmia", "Arrhythmia", "Аритмия"),
    ("assonance", "Assonance", "Ассонанс"),
    ("asyndeton", "Asyndeton", "Бессоюзие"),
    ("bimetry", "Bimetry", "Биметрия"),
    ("cacophony", "Cacophony", "Какофония"),
    ("chiasmus", "Chiasmus", "Хиазм"),
    ("circumlocution", "Circumlocution (periphrasis)", "Перифраз"),
    ("comparison", "Comparison (simile)", "Сравнение"),
    ("conceit", "Conceit (extended metaphor)", "Развёрнутая метафора"),
    ("contamination", "Contamination", "Контаминация"),
    ("emphasis", "Emphasis", "Эмфаза"),
    ("enjambment", "Enjambment", "Анжамбеман"),
    ("epithet", "Epithet", "Эпитет"),
    ("epiphora", "Epiphora (epistrophe)", "Эпифора"),
    ("estrangement", "Estrangement (defamiliarization)", "Остранение"),
    ("gradation", "Gradation (climax)", "Градация"),
    ("grotesque", "Grotesque", "Гротеск"),
    ("homeric_epithet", "Homeric epithet (fixed epithet)", "Постоянный эпитет"),
    ("hyperbole", "Hyperbole", "Гипербола"),
    ("imagery", "Imagery", "Образность"),
    ("internal_rhyme", "Internal rhyme", "Внутренняя рифма"),
    ("inversion", "Inversion", "Инверсия"),
    ("irony", "Irony", "Ирония"),
    ("isocolon", "Isocolon", "Изоколон"),
    ("line_break", "Line break", "Перенос строки"),
    ("literal_meaning", "Literal meaning (denotation)", "Прямое значение (денотат)"),
    ("litotes", "Litotes (understatement)", "Литота"),
    ("malapropism", "Malapropisms", "Неправильности речи (солецизмы)"),
    ("metaphor", "Metaphor", "Метафора"),
    ("metonymy", "Metonymy", "Метонимия"),
    ("onomatopoeia", "Onomatopoeia", "Звукоподражание"),
    ("parallelism", "Parallelism", "Параллелизм"),
    ("parcelation", "Parcelation", "Парцелляция"),
    ("pastiche", "Pastiche (stylization)", "Стилизация"),
    ("personification", "Personification", "Олицетворение"),
    ("pleonasm", "Pleonasm (redundancy)", "Плеоназм"),
    ("polysyndeton", "Polysyndeton", "Многосоюзие"),
    ("pun", "Pun", "Каламбур"),
    ("rhetorical_address", "Rhetorical address (apostrophe)", "Риторическое обращение"),
    ("rhetorical_exclamation", "Rhetorical exclamation", "Риторическое восклицание"),
    ("rhetorical_question", "Rhetorical question", "Риторический вопрос"),
    ("rhythmic_prose", "Rhythmic prose", "Ритмическая проза"),
    ("semantic_assonance", "Semantic assonance", "Смысловой ассонанс"),
    ("sound_ring", "Sound ring", "Звуковое кольцо"),
    ("strophic_ring", "Strophic ring", "Строфическое кольцо"),
    ("symploce", "Symplect", "Симплока"),
    ("synecdoche", "Synecdoche", "Синекдоха"),
    ("synesthesia", "Synesthesia", "Синестезия"),
    ("syntactic_inversion", "Syntactic inversion", "Синтаксическая инверсия"),
    # Lexical richness.
    ("abbreviations", "Abbreviations", "Аббревиатуры"),
    ("antonyms", "Antonyms", "Антонимы"),
    ("archaisms", "Archaisms", "Архаизмы"),
    ("argot", "Argot", "Арго"),
    ("borrowings", "Borrowings", "Заимствования"),
    ("childrens_speech", "Children's speech", "Детская речь"),
    ("colloquialisms", "Colloquialisms", "Разговорная лексика"),
    ("common_vocabulary", "Common vocabulary", "Общеупотребительная лексика"),
    ("dialectal_words", "Dialectal words", "Диалектизмы"),
    ("euphemisms", "Euphemisms", "Эвфемизмы"),
    ("formal_vocabulary", "Formal vocabulary", "Книжная лексика"),
    ("homonyms", "Homonyms", "Омонимы"),
    ("phraseological_units", "Phraseological units", "Фразеологизмы"),
    ("jargonisms", "Jargonisms", "Жаргонизмы"),
    ("neologisms", "Neologisms", "Неологизмы"),
    ("professionalisms", "Professionalisms", "Профессионализмы"),
    ("regionalisms", "Regionalisms", "Регионализмы"),
    ("slang", "Slang", "Сленг"),
    ("synonyms", "Synonyms", "Синонимы"),
    ("terms", "Terms", "Термины"),
    ("vernacular_words", "Vernacular words", "Просторечия"),
    ("vulgarisms", "Vulgarisms", "Вульгаризмы"),
    ("old_slavonicisms", "Old Slavonicisms", "Старославянизмы"),
    ("historicisms", "Historicisms", "Историзмы"),
)
DEVICE_KEYS = frozenset(key for key, _, _ in STYLISTIC_DEVICES)


# --- reviewer agreement --------------------------------------------------------------------------


def review_agreement(pairs: Sequence[tuple[str, str]]) -> dict[str, float | int | None]:
    """Agreement of two reviewers on the double-reviewed sample: each pair is the two verdicts
    ("accept"/"return") of one round. Percent agreement and Cohen's kappa (two raters, two
    categories; kappa is None when chance agreement is 1, i.e. both always gave one verdict)."""
    n = len(pairs)
    if n == 0:
        return {"pairs": 0, "agreement": None, "kappa": None}
    same = sum(1 for a, b in pairs if a == b)
    po = same / n
    p1 = sum(1 for a, _ in pairs if a == "accept") / n
    p2 = sum(1 for _, b in pairs if b == "accept") / n
    pe = p1 * p2 + (1 - p1) * (1 - p2)
    kappa = None if pe >= 1 else (po - pe) / (1 - pe)
    return {"pairs": n, "agreement": po, "kappa": kappa}
