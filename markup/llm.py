"""An LLM's span markups, scored like any participant's system: the judge worker's
OpenAI-compatible backend marks each text of a pull sample through the same session rules
(markup.contest), so deadlines, caps and СТАР apply unchanged. A local model is served over the
same API by `python -m judge_worker.server`."""

from __future__ import annotations

from collections.abc import Callable

from judge_worker import JudgeBackend
from judge_worker.markup import markup_messages, parse_markup_reply
from judge_worker.types import JudgeItem
from markup import contest
from markup.models import MarkupSample, SampleMode
from participants.models import Participant
from protocol.markup_classifier import load_classifier

Say = Callable[[str], None]


def llm_markup_run(
    sample: MarkupSample,
    participant: Participant,
    system: str,
    backend: JudgeBackend,
    say: Say | None = None,
) -> contest.RunReport:
    """Open the participant's run, mark every text with the model, close the run. A fragment
    the classifier refuses (a crossing, an ИСП without correction) is dropped and the rest sent
    again once; what the model got wrong is reported, never repaired by guessing."""
    if sample.mode != SampleMode.PULL:
        raise contest.RunRefused(409, "sample", "an LLM run needs a pull sample")
    say = say or (lambda _line: None)
    run = contest.run_open(participant, sample, system)
    while (item := contest.run_next(run).item) is not None:
        text = item.text
        classifier = load_classifier(text.classifier_name, text.classifier_version)
        codes = classifier.for_subject(text.subject)
        messages = markup_messages(text.text, [(t.code, t.name_ru) for t in codes])
        job = JudgeItem(str(item.pk), str(text.pk), messages, allowed_scores=(0.0,))
        output = backend.judge([job])[0]
        reply = parse_markup_reply(output.raw_text, text.text, {t.code: t.group for t in codes})
        selections = reply.selections
        for _attempt in range(2):
            try:
                contest.run_submit(run, item.text_id, {"selections": selections})
                break
            except contest.RunRefused as refused:
                bad = {i.get("fragment") for i in refused.extra.get("issues", [])}
                if refused.status != 422 or None in bad:
                    say(f"text {text.external_id}: refused ({refused})")
                    break
                selections = [s for k, s in enumerate(selections) if k not in bad]
        say(
            f"text {text.external_id}: {len(selections)} fragments"
            + (f"; skipped: {'; '.join(reply.problems)}" if reply.problems else "")
        )
    contest.run_close(run)
    return contest.run_report(run)
