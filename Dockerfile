# syntax=docker/dockerfile:1
# Pollux Studio images. Targets:
#   web    the Django app: gunicorn, and (with another command) the Celery worker and beat
#   judge  the same app plus the judge-gpu extra (torch with CUDA wheels, the versions the GPU
#          tests passed with) for the GPU judge worker
# docker-compose.yml builds both; by hand: docker build --target web -t pollux-studio .

# --- source: the tree, with compiled translations --------------------------------------------
FROM python:3.11-slim AS source
RUN apt-get update \
    && apt-get install -y --no-install-recommends gettext \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# Django reads .mo files; the repository keeps the .po sources.
# ("{} +" rather than "\;" so that a broken catalogue fails the build.)
RUN find . -name '*.po' -not -path './.venv/*' \
    -exec sh -c 'for f; do msgfmt --check -o "${f%.po}.mo" "$f" || exit 1; done' _ {} +

# --- base: the runtime dependencies, read from pyproject.toml (cached until it changes) ------
FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DJANGO_SETTINGS_MODULE=config.settings.production
RUN groupadd --system --gid 10001 pollux \
    && useradd --system --uid 10001 --gid pollux --home-dir /app --shell /usr/sbin/nologin pollux
WORKDIR /app
# Only the dependency lists (docker/requirements.py reads them from pyproject.toml), so that
# editing the code does not reinstall them.
COPY pyproject.toml docker/requirements.py /tmp/build/
RUN python /tmp/build/requirements.py /tmp/build/pyproject.toml > /tmp/build/requirements.txt \
    && python /tmp/build/requirements.py /tmp/build/pyproject.toml --extra judge-gpu \
        > /tmp/build/requirements-judge.txt \
    && pip install -r /tmp/build/requirements.txt

# --- web -------------------------------------------------------------------------------------
FROM base AS web
COPY --from=source /src /app
RUN sh /app/docker/assemble.sh
USER pollux
EXPOSE 8000
ENTRYPOINT ["/app/docker/entrypoint.sh"]
CMD ["web"]

# --- judge: torch (PyPI's Linux wheels bundle CUDA; the host needs only the NVIDIA driver) ---
FROM base AS judge-deps
RUN pip install -r /tmp/build/requirements-judge.txt

FROM judge-deps AS judge
COPY --from=source /src /app
RUN sh /app/docker/assemble.sh
# Model weights and the Hugging Face cache live on the models volume, not in the image.
ENV HF_HOME=/models/huggingface \
    POLLUX_JUDGE_MODELS_DIR=/models
USER pollux
ENTRYPOINT ["/app/docker/entrypoint.sh"]
CMD ["celery", "-A", "config", "worker", "-Q", "judge", "--pool", "solo", "-c", "1", "--hostname", "judge@%h", "--loglevel", "INFO"]
