"""One rationale rule, four copies, one list of tricky texts (tests/data/rationale_cases.json).

The Python rule (protocol/rationale.py) is the authority; the Arrow copy (the dataset filter),
the SQL pre-filter (sound: whatever it proves must be valid) and the page's JavaScript copy
(static/js/rationale.js, run with node) must give the same verdicts on the same cases.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from django.db import connection

from dataset.aggregation import rationale_ok_vectorised, rationale_sure_sql
from protocol.rationale import MAX_LENGTH, RationaleRule, rationale_errors

ROOT = Path(__file__).resolve().parents[2]
DATA = json.loads((ROOT / "tests" / "data" / "rationale_cases.json").read_text("utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]


def _rule(case: dict[str, Any]) -> RationaleRule:
    params = {**DATA["rule"], **case.get("rule", {})}
    return RationaleRule(
        min_words=params["min_words"], script=params["script"], script_share=params["script_share"]
    )


def _id(case: dict[str, Any]) -> str:
    return f"{case['why']}|{case['text'][:20]!r}|{case['score']}"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_the_python_rule_on_the_shared_cases(case: dict[str, Any]) -> None:
    errors = rationale_errors(
        case["text"],
        score=case["score"],
        is_na=case["is_na"],
        best_score=case["best"],
        rule=_rule(case),
    )
    assert (errors == []) is case["ok"], errors


def test_the_arrow_copy_agrees_on_the_shared_cases() -> None:
    rules = {(r.min_words, r.script, r.script_share) for r in map(_rule, CASES)}
    mismatches = []
    for min_words, script, share in rules:
        cases = [
            c
            for c in CASES
            if (lambda r: (r.min_words, r.script, r.script_share))(_rule(c))
            == (min_words, script, share)
        ]
        got = rationale_ok_vectorised(
            pa.array([c["text"] for c in cases]),
            np.array([np.nan if c["score"] is None else c["score"] for c in cases], dtype=float),
            np.array([c["is_na"] for c in cases]),
            np.array([c["best"] for c in cases]),
            script=script,
            min_words=min_words,
            script_share=share,
        )
        mismatches += [c["why"] for c, g in zip(cases, got.tolist(), strict=True) if g != c["ok"]]
    assert mismatches == []


@pytest.mark.django_db
def test_the_sql_prefilter_never_proves_a_bad_rationale() -> None:
    proven = []
    for case in CASES:
        rule = _rule(case)
        cond = rationale_sure_sql(
            "t.r", script=rule.script, min_words=rule.min_words, script_share=rule.script_share
        )
        if cond is None:
            continue
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT {cond} FROM (SELECT %s::text AS r) AS t", [case["text"]])  # noqa: S608 (the condition is ours)
            sure = bool(cursor.fetchone()[0])
        # Sound: what the database proves valid is valid by the Python rule.
        assert not sure or case["ok"], case
        if sure:
            proven.append(case["why"])
    # Useful: ordinary Russian rationales are proven without their text leaving the database.
    assert "two words" in proven and "Russian naming code" in proven


def _node() -> str | None:
    """node, or the one bundled with Playwright's driver (the browser tests' harness)."""
    found = shutil.which("node")
    if found:
        return found
    try:
        import playwright

        bundled = Path(playwright.__file__).parent / "driver" / "node"
        return str(bundled) if bundled.exists() else None
    except ImportError:
        return None


NODE = _node()
JS_RUNNER = """
const rule = require(process.argv[1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = input.map((c) => rule.errors(c.text, c.value, c.best, c.rule));
process.stdout.write(JSON.stringify(out));
"""


@pytest.mark.skipif(NODE is None, reason="no JavaScript engine (node or Playwright's) here")
def test_the_page_copy_agrees_on_the_shared_cases() -> None:
    cases = [
        *CASES,
        # Length is the server's limit, sent to the page; counted in code points.
        {
            "text": "а " * (MAX_LENGTH // 2) + "б",
            "score": 1,
            "is_na": False,
            "best": 2,
            "ok": False,
            "why": "too long",
        },
        # 10,012 code points, 20,012 UTF-16 units: within the limit.
        {
            "text": "😀" * (MAX_LENGTH // 2) + " Есть ошибки",
            "score": 1,
            "is_na": False,
            "best": 2,
            "ok": True,
            "why": "emoji are no letters; length in code points",
        },
    ]
    payload = [
        {
            "text": c["text"],
            "value": "na" if c["is_na"] else str(c["score"]),
            "best": str(c["best"]),
            "rule": _rule(c).for_client(),
        }
        for c in cases
    ]
    assert NODE is not None
    run = subprocess.run(
        [NODE, "-e", JS_RUNNER, str(ROOT / "static" / "js" / "rationale.js")],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    got = json.loads(run.stdout)
    python = [
        rationale_errors(
            c["text"], score=c["score"], is_na=c["is_na"], best_score=c["best"], rule=_rule(c)
        )
        for c in cases
    ]
    # Same verdicts and the same messages (the page shows the server's texts).
    mismatches = [
        (c["why"], js, py) for c, js, py in zip(cases, got, python, strict=True) if js != py
    ]
    assert mismatches == []
    assert [not js for js in got] == [c["ok"] for c in cases]


def test_the_page_reads_every_parameter_from_the_server(settings: Any) -> None:
    settings.POLLUX = {
        **settings.POLLUX,
        "RATIONALE_SCRIPT": "latin",
        "RATIONALE_MIN_WORDS": 3,
        "RATIONALE_SCRIPT_SHARE": 0.75,
    }
    client = RationaleRule.current().for_client()
    assert client["script"] == "latin" and client["min_words"] == 3
    assert client["script_share"] == 0.75 and client["script_ranges"] == [[65, 90], [97, 122]]
    assert replace(RationaleRule.current(), script=None).for_client()["script_ranges"] == []
