"""Demo guidelines of the Crowd panel (panel-wide and the critical format gate), bilingual.

Written as POLLUX's panels wrote theirs: the rule, then clearly good, clearly bad and hard
examples, then what to do in the hard cases. The author is the demo supervisor, so the console
shows who wrote them while the experts see only the version and its date.
"""

from __future__ import annotations

from typing import Any

from guidelines.models import Guideline
from guidelines.services import ExampleInput, guideline_save
from panels.models import Panel
from taxonomy.models import Criterion

DEMO_GUIDELINE_PANEL = "crowd"
DEMO_GUIDELINE_CRITERION = "narushenie_formata"

PANEL_WIDE = """\
**RU.** Оценивайте ответ так, как его прочтёт пользователь: по тому, что написано, а не по тому,
что модель «хотела сказать». Сначала критические критерии: если ответ нельзя оценить, остальное
не оценивается. Обоснование — одно-два предложения о том, *что именно* в ответе ведёт к оценке.

**EN.** Score the answer as its reader would meet it: by what is written, not by what the model
"meant". Critical criteria come first: an answer that cannot be evaluated stops there. A
rationale is one or two sentences on *what exactly* in the answer leads to the score.
"""

PANEL_HARD_CASES = """\
- **RU.** Ответ обрывается на полуслове — оценивайте написанное; обрыв отмечайте в обосновании.
- **EN.** The answer stops mid-sentence: score what is there and name the cut in the rationale.
"""

FORMAT_GATE = """\
**RU.** Критическое нарушение формата — это ответ, который *нельзя оценить*: сплошные
зацикливания, поток артефактов, ответ целиком на другом языке. Единичный повтор или опечатка —
не критическое нарушение (для них есть другие критерии).

**EN.** A critical format violation is an answer that *cannot be evaluated*: endless loops, a
stream of artefacts, an answer wholly in another language. A single repetition or typo is not
critical (other criteria are for those).
"""

FORMAT_HARD_CASES = """\
- **RU.** Ответ на русском с английскими терминами — не нарушение. Половина ответа на другом
  языке — нарушение, если без неё ответ теряет смысл.
- **EN.** A Russian answer with English terms is no violation. Half of it in another language
  is one if the answer makes no sense without that half.
"""

FORMAT_EXAMPLES = (
    ExampleInput(
        kind="good",
        text="Пчёлы сообщают о нектаре танцем: направление указывает угол к солнцу…",
        explanation="RU: связный ответ на русском — нарушения нет (0). EN: a coherent answer, 0.",
        score=0,
    ),
    ExampleInput(
        kind="bad",
        text="Пчёлы пчёлы пчёлы пчёлы пчёлы пчёлы пчёлы пчёлы пчёлы пчёлы пчёлы…",
        explanation="RU: сплошное зацикливание, оценить нельзя (1). EN: an endless loop, 1.",
        score=1,
    ),
    ExampleInput(
        kind="hard",
        text="Bees communicate via the waggle dance; направление танца показывает угол…",
        explanation=(
            "RU: начало на английском, но ответ понятен и по существу — нарушения нет (0). "
            "EN: it starts in English but stays readable and on topic: 0."
        ),
        score=0,
    ),
)


def demo_guidelines_ensure(supervisor: Any) -> int:
    """The Crowd panel's demo guidelines, written once (a rerun adds no version); how many
    versions were made."""
    panel = Panel.objects.filter(key=DEMO_GUIDELINE_PANEL).first()
    criterion = Criterion.objects.filter(key=DEMO_GUIDELINE_CRITERION).first()
    if panel is None:
        return 0
    made = 0
    wanted: list[tuple[Criterion | None, str, str, tuple[ExampleInput, ...]]] = [
        (None, PANEL_WIDE, PANEL_HARD_CASES, ())
    ]
    if criterion is not None:
        wanted.append((criterion, FORMAT_GATE, FORMAT_HARD_CASES, FORMAT_EXAMPLES))
    for target, body, hard_cases, examples in wanted:
        if Guideline.objects.filter(panel=panel, criterion=target).exists():
            continue  # a supervisor's later versions are his: the demo never overwrites them
        guideline_save(
            panel=panel,
            criterion=target,
            body=body,
            hard_cases=hard_cases,
            examples=examples,
            change_note="demo",
            user=supervisor,
        )
        made += 1
    return made
