"""Ports for servers a test starts as a subprocess (PostgreSQL, Redis, gunicorn, the judge server).

Those servers cannot be handed a bound socket, and the ones used here do not report a port they
chose themselves, so a port is picked first and bound by the server a moment later. The usual
`bind(("127.0.0.1", 0))` picks from the kernel's ephemeral range, the same range every outgoing
connection on the machine takes its local port from: in the gap another process's connection (or
another test run's `bind(0)`) can take it. Here ports come from below that range, where only
explicit binds land, at random, checked free, and never the same twice in one process; what is
left is another explicit bind choosing the same random port within milliseconds. Servers that
accept port 0 and report the port they got (ThreadingHTTPServer in tests/judging/fake_openai.py
and tests/judge_worker/test_hf_e2e.py) bind port 0 directly instead.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_given: set[int] = set()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def free_port() -> int:
    """A port on 127.0.0.1 that is free now, outside the ephemeral range, new to this process."""
    high = min(_ephemeral_low(), 65536)
    low = 20000 if high > 21000 else 1024
    rng = random.SystemRandom()
    for _ in range(200):
        port = rng.randrange(low, high)
        if port in _given:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError(f"no free port in {low}-{high - 1}")
