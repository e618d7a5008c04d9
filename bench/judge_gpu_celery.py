"""Judge workers on several GPUs consuming one run's batches through Celery (issue #17).

``python bench/judge_gpu_celery.py --scale full --gpus 2`` on the two-GPU device machine:

1. starts a Redis server (the broker) and one Celery worker per GPU (``CUDA_VISIBLE_DEVICES``,
   ``--pool solo``: one process holds one model, as the platform's judge worker does);
2. **one GPU**: only the first worker runs; every batch of the run is sent; triples/s;
3. **all GPUs**: the other workers join; the same batches are sent again; triples/s and the
   ratio to one GPU;
4. **a worker killed**: the batches again; once the last worker holds a batch, its process is
   killed (SIGKILL, mid-batch); the run must still end with every batch judged exactly once.

Delivery follows the platform's Celery settings (``config/settings/base.py``: late
acknowledgement, rejection on a lost worker, prefetch 1, a Redis visibility timeout after which
an unacknowledged task is delivered again), and a batch is claimed the way ``jobs.services``
claims a job: a claim with a heartbeat (here a Redis key that expires unless renewed), so a
second delivery of a batch held by a live worker waits, and one whose worker died takes it
over. The result is recorded once (``SET NX``): a second completion would count as a
duplicate. The platform's job rows live in PostgreSQL, which the GPU machine does not have;
this benchmark keeps the same protocol in Redis.

The last line: ``judge-gpu-celery: VALUE triples/s on N GPUs (baseline VALUE triples/s on 1
GPU, ratio R)``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import redis
from celery import Celery, signals

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PORT = int(os.environ.get("JUDGE_BENCH_REDIS_PORT", "6390"))
BROKER = f"redis://127.0.0.1:{PORT}/0"
VISIBILITY_S = 20  # the platform's is 2 h (its tasks run up to an hour); a bench run is minutes
CLAIM_TTL_S = 8  # the heartbeat renews the claim every third of this

app = Celery("judge_bench", broker=BROKER)
app.conf.update(
    task_acks_late=True,
    task_reject_on_worker_lost=True,
    worker_prefetch_multiplier=1,
    task_default_queue="judge",
    task_serializer="json",
    accept_content=["json"],
    broker_connection_retry_on_startup=True,
    broker_transport_options={"visibility_timeout": VISIBILITY_S, "unacked_restore_interval": 2},
    worker_hijack_root_logger=False,
)

_MODEL: dict[str, Any] = {}


def _store() -> redis.Redis:
    return redis.Redis.from_url(BROKER, decode_responses=True)


def _batch_answers(sc: Any, batch: int, per_batch: int) -> list[Any]:
    from bench.judge_gpu_workload import Scale, make_workload

    return make_workload(Scale(**{**asdict(sc), "n_answers": per_batch}), seed=1000 + batch)


@signals.worker_init.connect
def _load_model(sender: Any = None, **_kwargs: Any) -> None:
    """Each worker builds its model once, warms it up, then says it is ready."""
    from bench.judge_gpu_paths import run_cascade
    from bench.judge_gpu_workload import Scale, build_model, fit_budget, make_workload, scale_for

    sc = scale_for(os.environ.get("JUDGE_BENCH_SCALE", "small"))
    model = build_model(sc)
    sc = fit_budget(model, sc)
    warm_sc = Scale(**{**asdict(sc), "new_tokens": 4})
    run_cascade(model, make_workload(Scale(**{**asdict(warm_sc), "n_answers": 2}), 1), warm_sc)
    _MODEL.update(model=model, scale=sc)
    _store().set(f"ready:{os.environ['JUDGE_BENCH_WORKER']}", "1")


@app.task(bind=True, name="bench.judge_batch", max_retries=None)
def judge_batch(self: Any, run: str, batch: int, per_batch: int) -> str:
    from bench.judge_gpu_paths import run_cascade

    store = _store()
    me = os.environ["JUDGE_BENCH_WORKER"]
    done_key, claim_key = f"{run}:done:{batch}", f"{run}:claim:{batch}"
    if store.exists(done_key):
        return "done before"  # a redelivery of a finished batch does nothing
    if not store.set(claim_key, me, nx=True, ex=CLAIM_TTL_S) and store.get(claim_key) != me:
        # A live worker holds it (its heartbeat renews the claim): look again once it could
        # have lapsed. A dead worker's claim expires and the next look takes the batch over.
        raise self.retry(countdown=CLAIM_TTL_S)
    store.rpush(f"{run}:taken", json.dumps({"batch": batch, "worker": me, "at": time.time()}))
    stop = threading.Event()

    def heartbeat() -> None:
        while not stop.wait(CLAIM_TTL_S / 3):
            store.expire(claim_key, CLAIM_TTL_S)

    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    try:
        sc = _MODEL["scale"]
        answers = _batch_answers(sc, batch, per_batch)
        result = run_cascade(_MODEL["model"], answers, sc)
    finally:
        stop.set()
        beat.join()
    record = json.dumps(
        {
            "worker": me,
            "seconds": result["seconds"],
            "triples": len(result["outputs"]),
            "tokens": result["generated_tokens"],
            "digest": hash(tuple(map(tuple, result["outputs"]))),
        }
    )
    if store.set(done_key, record, nx=True):
        store.incr(f"{run}:completed")
    else:
        store.incr(f"{run}:duplicates")
    store.delete(claim_key)
    return "judged"


# --------------------------------------------------------------------------- the driver


def _redis_server() -> list[str]:
    carried = ROOT / ".whl" / "redis" / "redis-server"
    binary = os.environ.get("JUDGE_BENCH_REDIS") or shutil.which("redis-server")
    if not binary and carried.exists():
        binary = str(carried)
    if not binary:
        raise SystemExit("no redis-server: set JUDGE_BENCH_REDIS or carry .whl/redis")
    return [binary, "--port", str(PORT), "--save", "", "--appendonly", "no"]


def _start_worker(index: int, scale: str, log_dir: Path) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "CUDA_VISIBLE_DEVICES": str(index),
        "JUDGE_BENCH_WORKER": f"gpu{index}",
        "JUDGE_BENCH_SCALE": scale,
        "PYTHONPATH": os.pathsep.join(
            p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
        ),
    }
    log = open(log_dir / f"worker{index}.log", "wb")  # noqa: SIM115 (lives with the process)
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "bench.judge_gpu_celery", "worker",
         "-Q", "judge", "--pool", "solo", "-c", "1", "--hostname", f"gpu{index}@%h",
         "--loglevel", "WARNING", "--without-gossip", "--without-mingle", "--without-heartbeat"],
        env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip


def _wait(predicate: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > end:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.2)


def _run_batches(
    store: redis.Redis, run: str, n_batches: int, per_batch: int, kill: Any = None
) -> dict[str, Any]:
    start = time.perf_counter()
    for b in range(n_batches):
        judge_batch.delay(run, b, per_batch)
    killed = kill(store, run) if kill else None

    def finished() -> bool:
        return int(store.get(f"{run}:completed") or 0) >= n_batches

    _wait(finished, 3600, f"run {run}")
    seconds = time.perf_counter() - start
    done = [json.loads(store.get(f"{run}:done:{b}") or "{}") for b in range(n_batches)]
    triples = sum(d["triples"] for d in done)
    return {
        "seconds": seconds,
        "triples": triples,
        "triples_per_s": triples / seconds,
        "tokens_per_s": sum(d["tokens"] for d in done) / seconds,
        "completed": int(store.get(f"{run}:completed") or 0),
        "duplicates": int(store.get(f"{run}:duplicates") or 0),
        "by_worker": {w: sum(d["worker"] == w for d in done) for w in {d["worker"] for d in done}},
        "taken": [json.loads(x) for x in store.lrange(f"{run}:taken", 0, -1)],
        "killed": killed,
        "done": done,
    }


def main(scale: str = "small", gpus: int = 2, n_batches: int = 12, per_batch: int = 24) -> str:
    import torch

    log_dir = Path(os.environ.get("OUT") or tempfile.gettempdir()) / "judge_celery_logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    server = subprocess.Popen(_redis_server(), stdout=subprocess.DEVNULL, start_new_session=True)
    workers: list[subprocess.Popen[bytes]] = []
    info: dict[str, Any] = {
        "scale": scale,
        "gpus": gpus,
        "batches": n_batches,
        "answers_per_batch": per_batch,
        "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
    }
    try:
        store = _store()
        _wait(lambda: _ping(store), 30, "redis")
        store.flushall()
        workers.append(_start_worker(0, scale, log_dir))
        _wait(lambda: store.exists("ready:gpu0"), 600, "worker gpu0")
        one = _run_batches(store, "one", n_batches, per_batch)
        info["one_gpu"] = {k: v for k, v in one.items() if k != "done"}
        print("one GPU:", json.dumps(info["one_gpu"], default=str), flush=True)
        for i in range(1, gpus):
            workers.append(_start_worker(i, scale, log_dir))
        for i in range(1, gpus):
            _wait(lambda i=i: store.exists(f"ready:gpu{i}"), 600, f"worker gpu{i}")
        many = _run_batches(store, "many", n_batches, per_batch)
        info["all_gpus"] = {k: v for k, v in many.items() if k != "done"}
        print(f"{gpus} GPUs:", json.dumps(info["all_gpus"], default=str), flush=True)
        same = [d["digest"] for d in one["done"]] == [d["digest"] for d in many["done"]]
        info["same_outputs_one_vs_all"] = same

        victim_name = f"gpu{gpus - 1}"
        victim = workers[-1]

        def kill_mid_batch(store: redis.Redis, run: str) -> dict[str, Any]:
            # Kill the victim while it holds a claim it took at least a second ago (mid-batch).
            held: dict[str, Any] = {}

            def holding() -> bool:
                for x in store.lrange(f"{run}:taken", 0, -1):
                    taken = json.loads(x)
                    if (
                        taken["worker"] == victim_name
                        and store.get(f"{run}:claim:{taken['batch']}") == victim_name
                        and time.time() - taken["at"] > 1.0
                    ):
                        held.update(taken)
                        return True
                return False

            _wait(holding, 600, "the victim in the middle of a batch")
            os.killpg(victim.pid, signal.SIGKILL)
            return {"worker": victim_name, "batch": held["batch"], "at": time.time()}

        killed = _run_batches(store, "kill", n_batches, per_batch, kill=kill_mid_batch)
        info["worker_killed"] = {k: v for k, v in killed.items() if k != "done"}
        lost_batch = killed["killed"]["batch"]
        info["killed_batch_finished_by"] = killed["done"][lost_batch]["worker"]
        print("killed:", json.dumps(info["worker_killed"], default=str), flush=True)
    finally:
        for w in workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGTERM)
        for w in workers:
            try:
                w.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(w.pid, signal.SIGKILL)
        server.terminate()
    ok = (
        killed["completed"] == n_batches
        and killed["duplicates"] == 0
        and many["duplicates"] == 0
        and info["killed_batch_finished_by"] != victim_name
    )
    info["nothing_lost_nothing_twice"] = ok
    ratio = many["triples_per_s"] / one["triples_per_s"]
    info["ratio"] = ratio
    out_path = os.environ.get("JUDGE_BENCH_JSON")
    if out_path:
        Path(out_path).write_text(json.dumps(info, indent=2, default=str), encoding="utf-8")
    print(json.dumps(info, indent=2, default=str))
    line = (
        f"judge-gpu-celery: {many['triples_per_s']:.1f} triples/s on {gpus} GPUs "
        f"(baseline {one['triples_per_s']:.1f} triples/s on 1 GPU, ratio {ratio:.2f}); "
        f"worker killed mid-batch: {killed['completed']}/{n_batches} batches, "
        f"{killed['duplicates']} judged twice"
    )
    print(line)
    if not ok:
        raise SystemExit("a batch was lost or judged twice: see above")
    return line


def _ping(store: redis.Redis) -> bool:
    try:
        return bool(store.ping())
    except redis.ConnectionError:
        return False


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=["small", "full"], default="small")
    parser.add_argument("--gpus", type=int, default=2)
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--answers-per-batch", type=int, default=24)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main(args.scale, args.gpus, args.batches, args.answers_per_batch)
