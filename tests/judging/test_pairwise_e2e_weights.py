"""The pairwise (REPA) judge end to end with the real SmolLM2-135M weights on CPU, through the
local transformers backend the GPU worker uses (the OpenAI-compatible path is covered in
test_pairwise_judge.py against a stub server).

A 135M model is a poor judge: parse failures are expected. What is asserted is the contract:
every (triple, template) gets exactly one row, a failure keeps its raw text and never becomes a
label, a parsed label is one of the four options in the pair's orientation, and the one-shot
example shown is a unanimous item of another pair.
"""

from __future__ import annotations

from typing import Any

import pytest

from judging import services
from judging.backends import build_backend
from judging.models import PairwiseJudgeEstimate, RunStatus
from protocol.pairwise import Label
from tests.judging.test_e2e_weights import MAX_NEW_TOKENS, _weights
from tests.judging.test_pairwise_judge import World

pytestmark = [pytest.mark.judge, pytest.mark.django_db, pytest.mark.timeout(1500)]


def test_a_pairwise_run_with_real_weights_keeps_the_contract(personas: Any) -> None:
    world = World(personas)
    config = services.config_save(
        name="smollm2-sbs",
        backend="transformers",
        model_path=_weights(),
        decoding={"do_sample": False, "max_new_tokens": MAX_NEW_TOKENS},
        batch_size=4,
    )
    run = services.run_create(
        config=config,
        scope={"panel": personas.panel_a.pk},
        kind="pairwise",
        templates=["repa_1"],
        shots=1,
        enqueue=False,
    )
    backend = build_backend(config)
    run = services.run_execute_inline(run=run, backend_factory=lambda r: backend)
    run.refresh_from_db()
    # Panel A holds two pairs on two criteria each: four calls of one template.
    assert (run.status, run.done, run.total) == (RunStatus.DONE, 4, 4)
    rows = list(PairwiseJudgeEstimate.objects.filter(run=run))
    assert sorted(r.triple_id for r in rows) == sorted(
        t.pk for (name, _key), t in world.triples.items() if name in ("P1", "P2")
    )
    options = {label.value for label in Label}
    by_id = {t.pk: t for t in world.triples.values()}
    # Every unanimous item of the world (World.label): the draw, seeded by the run's key, may
    # pick any of them for the other pair.
    unanimous = (
        ("P1", "factuality"),
        ("P1", "overall"),
        ("P2", "factuality"),
        ("P0", "repetition"),
    )
    gold = [world.triples[key] for key in unanimous]
    for row in rows:
        assert row.template == "repa_1"
        assert row.raw_text or row.generated_tokens == 0
        assert row.generated_tokens <= MAX_NEW_TOKENS
        if row.parse_ok:
            assert row.label in options and row.shown_label in options
        else:
            assert row.label == "" and row.error
        # One gold example: a unanimous item of another pair, never of the pair judged.
        assert len(row.examples) == 1, row.examples
        example = by_id[row.examples[0]]
        assert example in gold and example.pair_id != by_id[row.triple_id].pair_id
    assert run.prompt_tokens > 0 and run.generated_tokens > 0
