#!/bin/sh
# Finish an image: register the project, collect static files, make the writable folders.
set -eu
cd /app
# Editable on purpose: settings find templates/, static/ and the POLLUX catalogue through
# BASE_DIR, the source tree, so the app runs from /app; --no-deps because base installed them.
pip install --no-deps -e .
# Production settings need these to import; nothing here touches the database.
DJANGO_SECRET_KEY=collectstatic DJANGO_ALLOWED_HOSTS=localhost \
    DATABASE_URL=sqlite:////tmp/collectstatic.sqlite3 \
    python manage.py collectstatic --noinput --verbosity 0
rm -f /tmp/collectstatic.sqlite3
# var/ holds media, private exports and imports: a volume shared by web and the workers.
mkdir -p /app/var /models
chown pollux:pollux /app/var /models
chmod +x /app/docker/entrypoint.sh
