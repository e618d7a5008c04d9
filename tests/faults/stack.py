"""A private real stack on 127.0.0.1: PostgreSQL (initdb), Redis, gunicorn and a Celery worker.

Nothing here touches the shared services on 5432/6379: the cluster and the Redis server are new,
in a temporary folder, on free ports, and are stopped at the end. PostgreSQL refuses to run as
root, so it runs as the `postgres` user through runuser when the tests run as root.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx

from tests.ports import free_port

ROOT = Path(__file__).resolve().parents[2]


def _wait_port(port: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout}s")


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        raise FileNotFoundError(name)
    return path


class Stack:
    def __init__(self, workdir: Path) -> None:
        self.dir = workdir
        self.pg_port, self.redis_port, self.web_port = free_port(), free_port(), free_port()
        self.pgdata = workdir / "pgdata"
        self.web: subprocess.Popen[bytes] | None = None
        self.worker: subprocess.Popen[bytes] | None = None
        self.redis: subprocess.Popen[bytes] | None = None
        self.as_postgres = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    # -- environment -------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.web_port}"

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        redis = f"redis://127.0.0.1:{self.redis_port}"
        env.update(
            {
                "DJANGO_SETTINGS_MODULE": "tests.faults.stack_settings",
                "DATABASE_URL": f"postgres://postgres@127.0.0.1:{self.pg_port}/pollux",
                "REDIS_URL": f"{redis}/0",
                "CELERY_BROKER_URL": f"{redis}/0",
                "CELERY_RESULT_BACKEND": f"{redis}/0",
                "CACHE_URL": f"{redis}/1",
                "PRIVATE_STORAGE_ROOT": str(self.dir / "private"),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    # -- PostgreSQL --------------------------------------------------------------------------
    def start_postgres(self) -> None:
        self.dir.chmod(0o777)
        if not self.pgdata.exists():
            self.pgdata.mkdir()
            shutil.chown(self.pgdata, "postgres") if self.as_postgres else None
            subprocess.run(
                [*self.as_postgres, _pg_bin("initdb"), "-D", str(self.pgdata), "-U", "postgres",
                 "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8"],
                check=True, capture_output=True, timeout=120,
            )  # fmt: skip
        self._pg_ctl("start")
        _wait_port(self.pg_port, 30)

    def _pg_ctl(self, action: str) -> None:
        options = f"-p {self.pg_port} -h 127.0.0.1 -k {self.pgdata} -c fsync=on"
        subprocess.run(
            [*self.as_postgres, _pg_bin("pg_ctl"), "-D", str(self.pgdata), "-o", options,
             "-l", str(self.dir / "postgres.log"), "-w", "-t", "60", "-m", "fast", action],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def restart_postgres(self) -> None:
        self._pg_ctl("restart")

    def create_database(self) -> None:
        subprocess.run(
            [*self.as_postgres, _pg_bin("createdb"), "-h", "127.0.0.1", "-p", str(self.pg_port),
             "-U", "postgres", "pollux"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        self.manage("migrate", "--noinput", timeout=600)
        self.ctl("bootstrap")

    # -- Redis -------------------------------------------------------------------------------
    def start_redis(self) -> None:
        # Append-only with fsync on every write, as a broker that must not lose tasks should be.
        self.redis = subprocess.Popen(
            ["redis-server", "--port", str(self.redis_port), "--bind", "127.0.0.1",
             "--dir", str(self.dir), "--save", "", "--appendonly", "yes",
             "--appendfsync", "always", "--protected-mode", "yes"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        _wait_port(self.redis_port, 15)

    def restart_redis(self) -> None:
        assert self.redis is not None
        self.redis.terminate()
        self.redis.wait(timeout=30)
        self.start_redis()

    # -- gunicorn ----------------------------------------------------------------------------
    def start_web(self) -> None:
        self.web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind",
             f"127.0.0.1:{self.web_port}", "--workers", "2", "--threads", "4",
             "--worker-class", "gthread", "--timeout", "60", "--graceful-timeout", "20",
             "--log-level", "warning"],
            cwd=ROOT, env=self.env(), start_new_session=True,
            stdout=open(self.dir / "web.log", "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.base_url + "/healthz", timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        raise TimeoutError("gunicorn did not answer /healthz")

    def stop_web(self) -> None:
        if self.web and self.web.poll() is None:
            # SIGTERM: gunicorn finishes the requests in flight (graceful), as a deploy does.
            os.killpg(self.web.pid, signal.SIGTERM)
            self.web.wait(timeout=60)

    def restart_web(self) -> None:
        self.stop_web()
        self.start_web()

    # -- Celery ------------------------------------------------------------------------------
    def start_worker(self) -> None:
        # -I: the slow export (a second per estimates chunk), so a kill can land mid-export.
        self.worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "config", "worker", "--pool", "solo",
             "-Q", "celery", "--without-gossip", "--without-mingle", "--without-heartbeat",
             "-I", "tests.faults.slow_export", "-l", "INFO"],
            cwd=ROOT, env=self.env(), start_new_session=True,
            stdout=open(self.dir / "worker.log", "ab"), stderr=subprocess.STDOUT,  # noqa: SIM115
        )  # fmt: skip

    def kill_worker(self) -> None:
        assert self.worker is not None
        os.killpg(self.worker.pid, signal.SIGKILL)
        self.worker.wait(timeout=30)

    # -- Django commands in the stack's environment -----------------------------------------
    def manage(self, *args: str, timeout: float = 300) -> str:
        result = subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=self.env(),
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        if result.returncode:
            raise RuntimeError(f"manage.py {args}: {result.stderr[-3000:]}")
        return result.stdout

    def ctl(self, *args: str, timeout: float = 300) -> Any:
        """Run tests/faults/stackctl.py (setup and counting through the ORM); JSON back."""
        result = subprocess.run(
            [sys.executable, "-m", "tests.faults.stackctl", *args], cwd=ROOT, env=self.env(),
            capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
        if result.returncode:
            raise RuntimeError(f"stackctl {args}: {result.stderr[-3000:]}")
        return json.loads(result.stdout.strip().splitlines()[-1])

    def stop(self) -> None:
        for proc in (self.worker, self.web, self.redis):
            if proc is not None and proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=30)
        if self.pgdata.exists():
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                self._pg_ctl("stop")


@contextlib.contextmanager
def running_stack(prefix: str, *, worker: bool = True) -> Iterator[Stack]:
    """A stack in a temporary folder, started (with a Celery worker unless `worker` is False)
    and stopped at the end. Not under pytest's tmp_path: its folders are private to the user,
    and PostgreSQL runs as `postgres` when the tests run as root."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        stack = Stack(Path(tmp))
        try:
            stack.start_postgres()
            stack.start_redis()
            stack.create_database()
            stack.start_web()
            if worker:
                stack.start_worker()
            yield stack
        finally:
            stack.stop()
