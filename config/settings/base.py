"""Settings shared by every environment; secrets and host specifics come from the environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import environ
from django.utils.translation import gettext_lazy as _

BASE_DIR = Path(__file__).resolve().parent.parent.parent
env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)

SECRET_KEY = env("DJANGO_SECRET_KEY", default="insecure-dev-key-change-me")
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS: list[str] = env.list("DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    # Django's own form templates, for the renderer below.
    "django.forms",
    "rules.apps.AutodiscoverRulesConfig",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    "axes",
    "taxonomy",
    "jobs",
    "panels",
    "participants",
    "material",
    "guidelines",
    "runs",
    "work",
    "quality",
    "dataset",
    "judging",
    "console",
    "comparison",
    "markup",
    "leaderboards",
    "submissions",
    "authoring",
    "generation",
    "discussion",
    "demo",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Axes last: it needs the authenticated user and must see every login attempt.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
# Forms render through the project's templates, so templates/django/forms/ can put a checkbox
# inside its label (Django's default puts the label above the box, apart from it).
FORM_RENDERER = "django.forms.renderers.TemplatesSetting"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "console.context_processors.roles",
                "comparison.context_processors.comparison_nav",
                "markup.context_processors.markup_nav",
                "leaderboards.context_processors.leaderboards_nav",
                "submissions.context_processors.submissions_nav",
                "authoring.context_processors.authoring_nav",
                "generation.context_processors.generation_nav",
                "work.context_processors.review_returns",
                "discussion.context_processors.discussion",
            ],
        },
    },
]

DATABASES = {"default": env.db("DATABASE_URL", default=f"sqlite:///{BASE_DIR / 'db.sqlite3'}")}
DATABASES["default"]["ATOMIC_REQUESTS"] = False
DATABASES["default"].setdefault("CONN_MAX_AGE", env.int("DB_CONN_MAX_AGE", default=60))


def sqlite_options(database: dict[str, Any]) -> None:
    """Make an SQLite database safe for one browser's concurrent requests (autosave + submit).

    By default SQLite opens transactions DEFERRED: a transaction that has read and then wants to
    write while another connection writes fails at once with "database is locked" (the busy
    timeout cannot help: waiting could deadlock). IMMEDIATE takes the write lock at BEGIN, so
    writers queue behind the busy timeout instead; WAL lets pages be read while one writes.
    Applies whatever settings module uses SQLite (DATABASE_URL=sqlite:...); a no-op otherwise.
    """
    if database.get("ENGINE") != "django.db.backends.sqlite3":
        return
    options = database.setdefault("OPTIONS", {})
    options.setdefault("transaction_mode", "IMMEDIATE")
    options.setdefault("timeout", env.int("SQLITE_BUSY_TIMEOUT_S", default=20))
    options.setdefault("init_command", "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;")


sqlite_options(DATABASES["default"])
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "rules.permissions.ObjectPermissionBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "ru"
LANGUAGES = [("ru", _("Russian")), ("en", _("English"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# Collected files only in production; elsewhere WhiteNoise serves straight from the finders.
STATIC_ROOT = env("STATIC_ROOT", default=None)
WHITENOISE_USE_FINDERS = True
STATICFILES_DIRS = [BASE_DIR / "static"]
MEDIA_ROOT = Path(env("MEDIA_ROOT", default=str(BASE_DIR / "var" / "media")))
MEDIA_URL = "media/"
# Exports and imports are stored here; the web never serves it directly (downloads go through
# a view that checks the role).
PRIVATE_STORAGE_ROOT = Path(env("PRIVATE_STORAGE_ROOT", default=str(BASE_DIR / "var" / "private")))

# Uploads: Django spools large files to disk; the import service enforces its own limit.
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
IMPORT_MAX_BYTES = env.int("IMPORT_MAX_BYTES", default=200 * 1024 * 1024)
IMPORT_MAX_TEXT_CHARS = env.int("IMPORT_MAX_TEXT_CHARS", default=200_000)
# A participant's submission file (answers to a benchmark's public inputs).
SUBMISSION_MAX_BYTES = env.int("SUBMISSION_MAX_BYTES", default=50 * 1024 * 1024)
# A closed benchmark version's submissions: the participant's OpenAI-compatible endpoint, called
# by the worker. Private, loopback and link-local addresses are refused unless this allows them
# (the embedded demo and the tests do: their endpoint is a local test server).
SUBMISSION_ENDPOINT_ALLOW_PRIVATE = env.bool("SUBMISSION_ENDPOINT_ALLOW_PRIVATE", default=False)
SUBMISSION_ENDPOINT_TIMEOUT_S = env.float("SUBMISSION_ENDPOINT_TIMEOUT_S", default=120.0)
SUBMISSION_ENDPOINT_MAX_RETRIES = env.int("SUBMISSION_ENDPOINT_MAX_RETRIES", default=2)
# Concurrent requests to one participant's endpoint (his batches go one at a time, and one
# endpoint submission of his is generated at a time).
SUBMISSION_ENDPOINT_CONCURRENCY = env.int("SUBMISSION_ENDPOINT_CONCURRENCY", default=4)
SUBMISSION_ENDPOINT_BATCH = env.int("SUBMISSION_ENDPOINT_BATCH", default=16)
# The request budget: this many HTTP requests per item (first tries and retries together).
SUBMISSION_ENDPOINT_REQUESTS_PER_ITEM = env.int("SUBMISSION_ENDPOINT_REQUESTS_PER_ITEM", default=3)
# The cost cap: prompt and generated tokens the endpoint reports, per submission.
SUBMISSION_ENDPOINT_MAX_TOKENS = env.int("SUBMISSION_ENDPOINT_MAX_TOKENS", default=5_000_000)
# Seals the stored endpoint keys (runs.secrets); SECRET_KEY when empty.
ENDPOINT_KEY_SECRET = env("ENDPOINT_KEY_SECRET", default="")
# The demo board's judge: the local test server ./scripts/demo starts (demo/judge_server.py).
DEMO_JUDGE_URL = env("DEMO_JUDGE_URL", default="http://127.0.0.1:8765/v1")
# Files the demo seed writes for the user (the participant's example answers file).
DEMO_DIR = Path(env("DEMO_DIR", default=str(BASE_DIR / "var" / "demo")))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.SessionAuthentication",
        "rest_framework.authentication.BasicAuthentication",
        # Participants' systems call the markup session API with a token (markup.api).
        "rest_framework.authentication.TokenAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # DRF's parsers, the JSON one made total (lib.jsonparser: deep nesting is a 400, not a 500).
    "DEFAULT_PARSER_CLASSES": [
        "lib.jsonparser.JSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 50,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Pollux Studio API",
    "DESCRIPTION": "Expert scoring of LLM answers by the POLLUX criteria.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
}
# Swagger UI and ReDoc from our own static files (drf-spectacular-sidecar, a pinned dependency):
# the default loads them from a CDN, so /api/docs/ was blank offline and on closed networks.
INSTALLED_APPS.append("drf_spectacular_sidecar")
SPECTACULAR_SETTINGS.update(
    {
        "SWAGGER_UI_DIST": "SIDECAR",
        "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
        "REDOC_DIST": "SIDECAR",
    }
)

# Celery: JSON only, time limits on every task, late acks so a killed worker's task is redelivered.
REDIS_URL = env("REDIS_URL", default="redis://127.0.0.1:6379/0")
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = env("CELERY_RESULT_BACKEND", default=REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_TIME_LIMIT = 60 * 60
CELERY_TASK_SOFT_TIME_LIMIT = 55 * 60
CELERY_TASK_ALWAYS_EAGER = env.bool("CELERY_TASK_ALWAYS_EAGER", default=False)
CELERY_TASK_EAGER_PROPAGATES = True
# Redis redelivers an unacknowledged task after this long; it must exceed the longest task.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=2 * 60 * 60)
}
# The GPU queue: judge batches and answer generation (one worker per GPU holds one model).
CELERY_TASK_ROUTES = {"judging.*": {"queue": "judge"}, "generation.*": {"queue": "judge"}}
# A running job whose heartbeat is older than this has lost its worker: it may be taken over.
JOB_STALE_SECONDS = env.int("JOB_STALE_SECONDS", default=600)
CELERY_BEAT_SCHEDULE = {
    "release-expired-assignments": {
        "task": "work.tasks.release_expired_assignments",
        "schedule": 300.0,
    },
    "requeue-stale-jobs": {
        "task": "jobs.requeue_stale",
        "schedule": 300.0,
    },
    "resend-stalled-generation": {
        "task": "runs.resend_stalled_generation",
        "schedule": 300.0,
    },
    "refresh-panel-stats": {
        "task": "console.tasks.refresh_all_panel_stats",
        "schedule": 300.0,
    },
}

# Judge workers: a batch claim is kept alive by a heartbeat; a silent claim may be taken over.
JUDGE_HEARTBEAT_SECONDS = env.float("JUDGE_HEARTBEAT_SECONDS", default=30)
JUDGE_CLAIM_STALE_SECONDS = env.int("JUDGE_CLAIM_STALE_SECONDS", default=120)

# Django-axes: login throttling.
AXES_FAILURE_LIMIT = env.int("AXES_FAILURE_LIMIT", default=10)
AXES_COOLOFF_TIME = 0.25  # hours
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]

# Sessions live in the database only: a Redis restart must not log experts out or fail their
# requests (Django's Redis cache raises on a refused connection, and cached_db reads through it).
# The cache serves debounce keys and other values that may be lost.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": env("CACHE_URL", default=REDIS_URL),
    }
}
SESSION_ENGINE = "django.contrib.sessions.backends.db"
SESSION_COOKIE_AGE = env.int("SESSION_COOKIE_AGE", default=12 * 60 * 60)
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = (
    False  # htmx reads the token from the page, not the cookie; harmless either way
)

# POLLUX protocol settings (each rule is a setting; defaults follow the paper).
POLLUX = {
    # Experts must write rationales in this script; None disables the language check.
    "RATIONALE_SCRIPT": env("POLLUX_RATIONALE_SCRIPT", default="cyrillic"),
    "RATIONALE_MIN_WORDS": 2,
    # "Written in that script" means: its letters are at least this share of all letters
    # (protocol/rationale.py defines the rule; the scoring page reads it from the server).
    "RATIONALE_SCRIPT_SHARE": env.float("POLLUX_RATIONALE_SCRIPT_SHARE", default=0.5),
    "ASSIGNMENT_RESERVATION_HOURS": env.int("POLLUX_RESERVATION_HOURS", default=48),
    "OVERLAP": {"critical": 5, "general": 3, "subjective": 3, "domain": 2, "task": 2},
    # A supervisor's adjudication (dataset.Adjudication) replaces the experts' verdict in the
    # aggregation only when this is on. Not read yet: adjudications are stored, shown on the
    # review page and exported in their own columns (issue #18).
    "ADJUDICATION_OVERRIDES": env.bool("POLLUX_ADJUDICATION_OVERRIDES", default=False),
    # Span markup (markup.work): two independent markups whose agreement M (percent, the lower
    # of the two directions) is below this call for a third expert. The regulations leave the
    # value to the organisers; docs/spans.md.
    "MARKUP_DIVERGENCE": env.float("POLLUX_MARKUP_DIVERGENCE", default=50.0),
    # The contest JSON's meta.test («Тест», required) of a markup text that comes without one
    # (markup.models.MarkupText.test); docs/spans.md.
    "MARKUP_TEST": env.str("POLLUX_MARKUP_TEST", default="Pollux Studio"),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
}
