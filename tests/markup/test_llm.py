"""markup_llm_run: an LLM behind an OpenAI-compatible endpoint (the tests' stand-in server)
marks a sample through the session rules and is scored like any participant."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from markup.models import MarkupRun, MarkupSample, MarkupSampleText, MarkupText, SampleMode
from markup.services import markup_store
from participants.models import Participant
from protocol.markup_format import MarkupDocument, default_meta
from protocol.spans import Fragment
from tests.conftest import make_user
from tests.judging.fake_openai import fake_openai

pytestmark = pytest.mark.django_db

TEXTS = ["Мы одеваем шапки и идём гулять.", "Читая книгу, снег падал за окном."]


def reply_for(prompt: str) -> str:
    # The stand-in model: one fragment per text, one of them crossing nothing and valid, the
    # other an ИСП without a correction (dropped by the run, the rest sent again).
    if "одеваем" in prompt:
        return json.dumps(
            [{"quote": "одеваем", "type": "Р.знач", "correction": "надеваем"}], ensure_ascii=False
        )
    return json.dumps(
        [
            {"quote": "Читая книгу, снег падал", "type": "Г.деепр"},
            {"quote": "окном", "type": "ИСП"},
        ],
        ensure_ascii=False,
    )


def test_an_llm_run_marks_every_text_and_is_scored() -> None:
    sample = MarkupSample.objects.create(name="llm")
    for position, body in enumerate(TEXTS):
        text = MarkupText.objects.create(external_id=f"llm-{position}", text=body, subject="rus")
        MarkupSampleText.objects.create(sample=sample, text=text, position=position)
        meta = default_meta()
        meta.update(subject="rus", expert="E")
        quote = "одеваем" if position == 0 else "Читая книгу, снег падал"
        start = body.find(quote)
        code = "Р.знач" if position == 0 else "Г.деепр"
        fragment = Fragment(
            start, start + len(quote), code, correction="надеваем" if position == 0 else ""
        )
        markup_store(MarkupDocument(body, [fragment], meta), external_id=text.external_id)
    Participant.objects.create(user=make_user("llm_team"), approved=True)
    out = StringIO()
    with fake_openai(reply_for=reply_for) as server:
        call_command(
            "markup_llm_run",
            "--sample", str(sample.pk), "--participant", "llm_team", "--system", "Fake LLM",
            "--endpoint", server["url"], "--model", "fake-judge",
            stdout=out,
        )  # fmt: skip
    run = MarkupRun.objects.get(system="Fake LLM")
    assert run.closed_at is not None
    items = list(run.items.order_by("position"))
    assert [len(i.markup.selections) for i in items if i.markup] == [1, 1]  # the ИСП dropped
    assert "СТАР 100.00 %" in out.getvalue()  # both markups equal the experts'


def test_an_llm_run_needs_a_pull_sample_and_a_participant() -> None:
    paced = MarkupSample.objects.create(name="paced", mode=SampleMode.PACED)
    Participant.objects.create(user=make_user("llm_team"), approved=True)
    with pytest.raises(CommandError, match="pull sample"):
        call_command(
            "markup_llm_run",
            "--sample", str(paced.pk), "--participant", "llm_team", "--system", "S",
            "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
        )  # fmt: skip
    with pytest.raises(CommandError, match="no approved participant"):
        call_command(
            "markup_llm_run",
            "--sample", str(paced.pk), "--participant", "nobody", "--system", "S",
            "--endpoint", "http://127.0.0.1:9/v1", "--model", "m",
        )  # fmt: skip
