"""Container health check: GET /healthz (which queries the database) must answer 200.

The request names a host from DJANGO_ALLOWED_HOSTS and says it came over HTTPS through the proxy,
so neither ALLOWED_HOSTS nor SECURE_SSL_REDIRECT turns it away.
"""

from __future__ import annotations

import os
import sys
import urllib.request


def main() -> int:
    hosts = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",") if h.strip()]
    # "*" and ".example.org" are patterns, not names: make one concrete name out of the first.
    host = (hosts[0] if hosts else "localhost").lstrip("*").lstrip(".") or "localhost"
    port = os.environ.get("PORT", "8000")
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/healthz",
        headers={"Host": host, "X-Forwarded-Proto": "https"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 (fixed URL)
            return 0 if response.status == 200 else 1
    except OSError as error:
        print(f"unhealthy: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
