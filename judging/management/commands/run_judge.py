"""Start a judge run from the command line: `python manage.py run_judge --config NAME --all`."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judging import services
from judging.backends import build_backend
from judging.models import JudgeBackendKind, JudgeConfig, JudgeRun
from judging.selectors import config_current


class Command(BaseCommand):
    help = "Start a judge run over a model, a task, a panel or every answer."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--config", required=True, help="judge configuration name")
        parser.add_argument(
            "--config-version", type=int, help="configuration version (default: latest)"
        )
        parser.add_argument("--model", type=int, help="LanguageModel id of the answers")
        parser.add_argument("--task", type=int, help="Task id (its whole subtree)")
        parser.add_argument("--panel", type=int, help="Panel id")
        parser.add_argument("--all", action="store_true", help="every triple")
        parser.add_argument("--limit", type=int, help="at most this many triples")
        parser.add_argument(
            "--backend", choices=list(JudgeBackendKind.values), help="override the backend"
        )
        parser.add_argument(
            "--wait", action="store_true", help="judge in this process instead of the queue"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            config = (
                JudgeConfig.objects.get(name=opts["config"], version=opts["config_version"])
                if opts["config_version"]
                else config_current(opts["config"])
            )
        except JudgeConfig.DoesNotExist as exc:
            raise CommandError(str(exc)) from exc
        scope = {k: opts[k] for k in ("model", "task", "panel", "all", "limit") if opts[k]}
        try:
            run = services.run_create(
                config=config, scope=scope, backend=opts["backend"], enqueue=not opts["wait"]
            )
        except services.JudgingError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"judge run {run.pk}: {run.total} triples, config {config}")
        if opts["wait"]:
            backend = None

            def factory(r: JudgeRun) -> Any:
                nonlocal backend
                # Loaded once for the whole run, and only if there is something to judge.
                backend = backend or build_backend(r.config, r.backend)
                return backend

            run = services.run_execute_inline(run=run, backend_factory=factory)
            self.stdout.write(
                f"judge run {run.pk} {run.status}: {run.done}/{run.total} judged, "
                f"{run.parse_failures} parse failures"
            )
