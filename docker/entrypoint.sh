#!/bin/sh
# Container entry point. `web` (the default) prepares the database and serves with gunicorn;
# anything else (celery worker, celery beat, manage.py ...) runs as given.
set -eu
# The project root (/app in the image).
cd "$(dirname "$0")/.."

if [ "${1:-web}" = "web" ]; then
  # Migrations, the POLLUX catalogue and the default panels, under a lock (see bootstrap.py).
  python docker/bootstrap.py
  # No control socket: it would live in $HOME, which the unprivileged user cannot write, and a
  # container is managed from outside anyway.
  exec gunicorn config.wsgi:application \
    --bind "0.0.0.0:${PORT:-8000}" \
    --workers "${WEB_CONCURRENCY:-3}" \
    --timeout "${GUNICORN_TIMEOUT:-60}" \
    --access-logfile - \
    --error-logfile - \
    --no-control-socket
fi
exec "$@"
