"""Opening the next answer and submitting its scores, under 200 simulated experts.

Setup (in the bench database, at POLLUX scale so queries meet full-size tables): 200 bench
experts get fresh answers of their own (copies of real instructions, routed and built by the
production builder). gunicorn serves config.wsgi on 127.0.0.1 with the bench settings.

Load: an asyncio load generator (httpx) runs 200 experts in a closed loop, each logging in and
then repeating: GET /queue/next/ (redirects to the scoring page), POST every score with a
rationale, until it has submitted ANSWERS_PER_EXPERT answers. The baseline, in the same run and
against the same server and concurrency, is a trivial Django view (/healthz: one SELECT 1).
Reported: requests/s, p50/p95/p99 latency per request kind, and the throughput ratio.

A closed loop with no think time keeps all 200 requests in flight, so its latency is queueing
(Little's law: about 200 / throughput, ~1 s even for the trivial view). Latency is therefore
also measured in a second, paced phase: the same 200 experts each open an answer, "read and
score" it for a random 5-15 s (humans take minutes), submit, and open the next one, starts
spread over the first 10 s; and the trivial view under the same request rate. The final line
is the closed loop's throughput ratio. Everything is bounded in count and time and talks only
to 127.0.0.1.

`python -m bench.scoring_page --per-request [--scale full]` (from the repository root, inside
the bench lock) measures instead the cost of one request of each kind without concurrency:
Django's test client in this process, a few bench experts, the same requests as the load.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import signal
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import line

ROOT = Path(__file__).resolve().parent.parent
EXPERTS = {"small": 50, "full": 200}
ANSWERS_PER_EXPERT = {"small": 2, "full": 3}
# Paced phase: answers per expert and the think time (seconds) between opening and submitting.
PACED_ANSWERS = 2
THINK_S = (5.0, 15.0)
PASSWORD = "bench-expert-pass"
RATIONALE = "Ответ соответствует критерию, замечаний нет."
TIME_CAP_S = 240


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prepare(n_experts: int, per_expert: int) -> list[str]:
    """Create bench experts with their own answers and assignments; returns usernames."""
    from django.contrib.auth import get_user_model
    from django.db import transaction

    from material.models import Answer, Instruction
    from panels.models import Expert, Membership, Panel
    from work.assignments import assignments_build

    user_model = get_user_model()
    # bench.datagen.ensure_dataset has moved every id sequence past the COPY-loaded rows.
    _cleanup()
    panel = Panel.objects.get(key="science")
    with transaction.atomic():
        # Only bench experts may receive the bench answers: everyone else is paused meanwhile.
        paused = list(Membership.objects.filter(is_paused=False).values_list("pk", flat=True))
        Membership.objects.filter(pk__in=paused).update(is_paused=True, paused_reason="bench")
        names = []
        for i in range(n_experts):
            user = user_model.objects.create_user(f"bench_expert_{i}", password=PASSWORD)
            expert = Expert.objects.create(user=user, profession="bench")
            Membership.objects.create(expert=expert, panel=panel)
            names.append(user.username)
        # A scientific-style instruction of a science-owned task: its domain criteria go to the
        # science panel, where the bench experts are.
        instruction = Instruction.objects.filter(
            task__path__startswith="Original Text Generation / Scientific text",
            style__key="scientific-text",
        ).first()
        assert instruction is not None, "no scientific instruction in the bench data"
        template = Answer.objects.filter(instruction=instruction).first()
        assert template is not None
        # Overlap 2 on the panel's criteria: each answer goes to two experts.
        n_answers = n_experts * per_expert // 2
        new = Answer.objects.bulk_create(
            [
                Answer(
                    instruction=instruction,
                    model=template.model,
                    text=template.text,
                    text_hash=f"bench-{i}",
                    external_id=f"bench-answer-{i}",
                )
                for i in range(n_answers)
            ]
        )
        assignments_build(answer_ids=[a.pk for a in new])
    return names


def _cleanup() -> None:
    from django.contrib.auth import get_user_model

    from material.models import Answer
    from panels.models import Expert, Membership

    Answer.objects.filter(external_id__startswith="bench-answer-").delete()
    Expert.objects.filter(user__username__startswith="bench_expert_").delete()
    get_user_model().objects.filter(username__startswith="bench_expert_").delete()
    Membership.objects.filter(paused_reason="bench").update(is_paused=False, paused_reason="")


SCORE_RE = re.compile(r'name="score_(\d+)" value="(\w+)"')
CSRF_RE = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


def _form(html: str) -> dict[str, str]:
    values: dict[str, list[str]] = {}
    for triple, value in SCORE_RE.findall(html):
        values.setdefault(triple, []).append(value)
    data = {"csrfmiddlewaretoken": CSRF_RE.findall(html)[0], "submission_key": os.urandom(8).hex()}
    for triple, options in values.items():
        numeric = [int(v) for v in options if v.isdigit()]
        # Critical gates (binary, 1 = violation) get 0; the others their top score.
        score = 0 if numeric == [0, 1] else max(numeric)
        data[f"score_{triple}"] = str(score)
        data[f"rationale_{triple}"] = RATIONALE
    return data


async def _login(client: Any, username: str) -> bool:
    page = await client.get("/accounts/login/")
    token = CSRF_RE.findall(page.text)[0]
    r = await client.post(
        "/accounts/login/",
        data={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
    )
    return bool(r.status_code == 302)


async def _expert(
    client: Any,
    answers: int,
    timings: dict[str, list[float]],
    errors: list[str],
    pace: Any = None,
) -> int:
    """One expert's loop; with ``pace`` (a random.Random) at a human-like (if fast) pace: a start
    spread over the first seconds and a think time between opening an answer and submitting it.
    """
    if pace is not None:
        await asyncio.sleep(pace.uniform(0, THINK_S[1] - THINK_S[0]))
    submitted = 0
    url = "/queue/next/"
    while submitted < answers:
        t0 = time.perf_counter()
        r = await client.get(url)
        if r.status_code != 302 or "/assignments/" not in r.headers.get("location", ""):
            if pace is not None:
                errors.append("paced: queue empty")
            break  # queue empty
        page = await client.get(r.headers["location"])
        timings["open"].append(time.perf_counter() - t0)
        if page.status_code != 200:
            errors.append(f"open {page.status_code}")
            break
        form = _form(page.text)
        if pace is not None:
            await asyncio.sleep(pace.uniform(*THINK_S))
        t0 = time.perf_counter()
        r = await client.post(str(page.url.path), data=form)
        timings["submit"].append(time.perf_counter() - t0)
        if r.status_code != 302:
            errors.append(f"submit {r.status_code}")
            break
        submitted += 1
        url = r.headers["location"]
    return submitted


async def _logged_in_run(base: str, names: list[str], work: Any) -> tuple[list[int], float]:
    """Log every expert in (not timed: a deliberately slow password hash), then time
    ``work(client)`` for all of them at once; returns their results and the seconds taken."""
    import httpx

    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    clients = [httpx.AsyncClient(base_url=base, timeout=60.0, limits=limits) for _ in names]
    try:
        gate = asyncio.Semaphore(8)

        async def login(c: Any, u: str) -> bool:
            async with gate:
                return await _login(c, u)

        logged = await asyncio.gather(*(login(c, u) for c, u in zip(clients, names, strict=True)))
        assert all(logged), "bench experts could not log in"
        started = time.perf_counter()
        done = await asyncio.wait_for(asyncio.gather(*(work(c) for c in clients)), TIME_CAP_S)
        return list(done), time.perf_counter() - started
    finally:
        await asyncio.gather(*(c.aclose() for c in clients))


async def _trivial_paced(
    base: str, n_clients: int, per_client: int, gap: tuple[float, float], timings: list[float]
) -> None:
    import httpx

    rng = random.Random(7)

    async def one(delay: float, gaps: list[float]) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
            await asyncio.sleep(delay)
            for pause in gaps:
                t0 = time.perf_counter()
                r = await client.get("/healthz")
                timings.append(time.perf_counter() - t0)
                assert r.status_code == 200
                await asyncio.sleep(pause)

    plans = [
        (rng.uniform(0, gap[1]), [rng.uniform(*gap) for _ in range(per_client)])
        for _ in range(n_clients)
    ]
    await asyncio.gather(*(one(d, g) for d, g in plans))


async def _trivial(base: str, n_clients: int, per_client: int, timings: list[float]) -> None:
    import httpx

    async def one() -> None:
        async with httpx.AsyncClient(base_url=base, timeout=30.0) as client:
            for _ in range(per_client):
                t0 = time.perf_counter()
                r = await client.get("/healthz")
                timings.append(time.perf_counter() - t0)
                assert r.status_code == 200

    await asyncio.gather(*(one() for _ in range(n_clients)))


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000


def _server(port: int) -> subprocess.Popen[bytes]:
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="config.settings.bench")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
         f"127.0.0.1:{port}", "--workers", "4", "--threads", "4", "--worker-class", "gthread",
         "--log-level", "warning", "--keep-alive", "120", "--timeout", "120"],
        cwd=ROOT, env=env, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("gunicorn did not start")


def per_request(scale: str, experts: int = 6, rounds: int = 10) -> list[str]:
    """Median wall time, CPU time of this thread and query count per request kind, unloaded.

    The CPU time is Django's side only (PostgreSQL and Redis work in their own processes);
    the first round warms caches and is not counted.
    """
    from urllib.parse import urlencode

    from bench.datagen import ensure_dataset

    ensure_dataset(scale, with_estimates=True)
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    samples: dict[str, list[tuple[float, float, int]]] = {"next": [], "page": [], "submit": []}

    def measured(kind: str, counted: bool, request: Any, *args: Any, **kwargs: Any) -> Any:
        with CaptureQueriesContext(connection) as queries:
            wall, cpu = time.perf_counter(), time.thread_time()
            response = request(*args, **kwargs)
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        if counted:
            samples[kind].append((wall, cpu, len(queries)))
        return response

    names = _prepare(experts, rounds)
    try:
        clients = []
        for name in names:
            client = Client()
            client.force_login(get_user_model().objects.get(username=name))
            clients.append(client)
        next_urls = ["/queue/next/"] * len(clients)
        for round_ in range(rounds):
            for i, client in enumerate(clients):
                r = measured("next", round_ > 0, client.get, next_urls[i])
                if r.status_code != 302 or "/assignments/" not in r["Location"]:
                    continue
                url = r["Location"]
                page = measured("page", round_ > 0, client.get, url)
                # Form-encoded, as the load generator (and a browser) sends it.
                body = urlencode(_form(page.content.decode()))
                form = "application/x-www-form-urlencoded"
                r = measured("submit", round_ > 0, client.post, url, body, content_type=form)
                assert r.status_code == 302, r.status_code
                next_urls[i] = r["Location"]
    finally:
        _cleanup()
    lines = []
    for kind, rows in samples.items():
        walls, cpus, counts = zip(*rows, strict=True)
        lines.append(
            f"{kind}: n={len(rows)} wall median {statistics.median(walls) * 1000:.1f} ms, "
            f"CPU median {statistics.median(cpus) * 1000:.1f} ms, "
            f"queries {min(counts)}-{max(counts)}"
        )
    return lines


def main(scale: str) -> str:
    import logging

    logging.getLogger("httpx").setLevel(logging.WARNING)
    from bench.datagen import ensure_dataset

    ensure_dataset(scale, with_estimates=True)
    from work.models import Estimate

    n, per = EXPERTS[scale], ANSWERS_PER_EXPERT[scale]
    names = _prepare(n, per + PACED_ANSWERS)
    from django.db import connection

    connection.close()
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server = _server(port)
    try:
        timings: dict[str, list[float]] = {"open": [], "submit": []}
        errors: list[str] = []

        done, scoring_s = asyncio.run(
            _logged_in_run(base, names, lambda c: _expert(c, per, timings, errors))
        )
        paced: dict[str, list[float]] = {"open": [], "submit": []}
        rng = random.Random(11)
        paced_each, paced_s = asyncio.run(
            _logged_in_run(
                base, names, lambda c: _expert(c, PACED_ANSWERS, paced, errors, pace=rng)
            )
        )
        paced_done = sum(paced_each)
        paced_requests = 2 * len(paced["open"]) + len(paced["submit"])
        paced_rps = paced_requests / paced_s
        # The trivial view at the same request rate: per client one request every n / rate s.
        mean_gap = n / paced_rps
        trivial_paced: list[float] = []
        asyncio.run(_trivial_paced(base, n, 6, (mean_gap / 2, mean_gap * 1.5), trivial_paced))
        # Each submitted answer costs 3 requests: the redirect, the page, the POST.
        scoring_requests = 2 * len(timings["open"]) + len(timings["submit"])
        scoring_rps = scoring_requests / scoring_s

        trivial: list[float] = []
        started = time.perf_counter()
        asyncio.run(_trivial(base, n, max(3, scoring_requests // n), trivial))
        trivial_s = time.perf_counter() - started
        trivial_rps = len(trivial) / trivial_s
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    stored = Estimate.objects.filter(
        assignment__expert__user__username__startswith="bench_expert_", status="submitted"
    ).count()
    submitted = sum(done)
    _cleanup()
    o, sub = timings["open"], timings["submit"]
    print(f"experts {n}, answers submitted {submitted}, estimates stored {stored}")
    print(f"errors {errors[:5]}")
    print(
        f"scoring: {scoring_rps:.0f} req/s over {scoring_s:.1f} s; "
        f"open next p50 {_pct(o, 0.5):.0f} ms p95 {_pct(o, 0.95):.0f} ms "
        f"p99 {_pct(o, 0.99):.0f} ms; submit p50 {_pct(sub, 0.5):.0f} ms "
        f"p95 {_pct(sub, 0.95):.0f} ms p99 {_pct(sub, 0.99):.0f} ms"
    )
    print(
        f"trivial view: {trivial_rps:.0f} req/s; p50 {_pct(trivial, 0.5):.0f} ms "
        f"p95 {_pct(trivial, 0.95):.0f} ms; mean {statistics.mean(trivial) * 1000:.0f} ms"
    )
    po, ps = paced["open"], paced["submit"]
    print(
        f"paced ({n} experts, think {THINK_S[0]:.0f}-{THINK_S[1]:.0f} s per answer): "
        f"{paced_done} answers, {paced_rps:.0f} req/s over {paced_s:.1f} s; "
        f"open next p50 {_pct(po, 0.5):.0f} ms p95 {_pct(po, 0.95):.0f} ms "
        f"p99 {_pct(po, 0.99):.0f} ms; submit p50 {_pct(ps, 0.5):.0f} ms "
        f"p95 {_pct(ps, 0.95):.0f} ms p99 {_pct(ps, 0.99):.0f} ms"
    )
    print(
        f"paced trivial view (same request rate): p50 {_pct(trivial_paced, 0.5):.0f} ms "
        f"p95 {_pct(trivial_paced, 0.95):.0f} ms p99 {_pct(trivial_paced, 0.99):.0f} ms"
    )
    return line("scoring-page", scoring_rps, "req/s", trivial_rps, scoring_rps / trivial_rps)


def compare_scales(scales: list[str], repeats: int = 2) -> str:
    """Per-request cost at two scales in one run (issue #17: 10x within 20 % of 1x).

    Each scale's measurement runs in a child process of its own (Django reads one database per
    process), the scales alternating ``repeats`` times so that the machine's load falls on
    both alike; the medians of the children's medians are compared.
    """
    import json
    import subprocess

    results: dict[str, dict[str, list[float]]] = {sc: {} for sc in scales}
    for _ in range(repeats):
        for sc in scales:
            out = subprocess.run(
                [sys.executable, "-m", "bench.scoring_page", "--per-request", "--json",
                 "--scale", sc],
                cwd=ROOT, env={k: v for k, v in os.environ.items() if k != "BENCH_DATABASE_URL"},
                check=True, capture_output=True, text=True,
            ).stdout  # fmt: skip
            for kind, value in json.loads(out.strip().splitlines()[-1]).items():
                results[sc].setdefault(kind, []).append(value)
    base, big = scales
    lines = []
    worst = 0.0
    for kind in results[base]:
        a, b = statistics.median(results[base][kind]), statistics.median(results[big][kind])
        worst = max(worst, b / a)
        lines.append(f"{kind}: {base} {a:.1f} ms, {big} {b:.1f} ms, ratio {b / a:.2f}")
    print("\n".join(lines), flush=True)
    return f"scoring-page per request: {big} / {base} worst ratio {worst:.2f} (goal <= 1.20)"


if __name__ == "__main__":
    import argparse
    import json

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-request", action="store_true", required=True)
    parser.add_argument("--scale", choices=["small", "full", "10x"], default="full")
    parser.add_argument("--json", action="store_true", help="last line: medians as JSON (ms)")
    parser.add_argument("--compare", metavar="SCALE,SCALE", help="e.g. full,10x: same run")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.bench")
    if args.compare:
        print(compare_scales(args.compare.split(",")), flush=True)
        sys.exit(0)
    measured_lines = per_request(args.scale)
    for result in measured_lines:
        print(result, flush=True)
    if args.json:
        medians = {
            text.split(":")[0]: float(text.split("wall median ")[1].split(" ms")[0])
            for text in measured_lines
        }
        print(json.dumps(medians), flush=True)
