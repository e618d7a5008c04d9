"""Load everything a newcomer needs to try the platform: catalogue, panels, people, material.

Idempotent: a second run finds what the first created and adds nothing. The demo accounts have a
fixed, printed password, so the command refuses to run unless DEBUG or POLLUX_DEMO is on (the
local settings) or --force is given.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Sequence
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from demo.demo_authoring import demo_authoring_ensure, demo_generation_ensure
from demo.demo_data import (
    DEMO_ADMIN,
    DEMO_EXPERT,
    DEMO_EXPERTS,
    DEMO_PASSWORD,
    DEMO_SUPERVISOR,
    DemoPerson,
    DemoReport,
    demo_seed,
)
from demo.demo_leaderboard import demo_leaderboard_ensure
from demo.demo_markup import (
    DEMO_PARTICIPANT,
    demo_contest_ensure,
    demo_markup_ensure,
    demo_markup_work_ensure,
)
from demo.demo_pairs import demo_pairs_build, demo_pairs_ensure, demo_past_pairs_ensure
from panels.defaults import ensure_default_panels
from panels.models import Panel
from taxonomy.services import load_pollux
from work.assignments import assignments_build


def _build_assignments(answer_ids: Sequence[int]) -> str:
    """Route the demo answers to the demo experts (the builder only fills what is missing)."""
    result = assignments_build(answer_ids=list(answer_ids))
    return f"assignments: {result}"


def _maybe_run_demo_judge(say: Callable[[str], None]) -> str | None:
    """A small LLM-judge run over the demo triples (judging.demo), next to the expert scores.

    A no-op (returns None) unless the judge extra is installed: torch and transformers importable
    and the `judging` app in INSTALLED_APPS. Runs once: a rerun finds the demo run and skips it.
    """
    if not apps.is_installed("judging"):
        return None
    # find_spec does not import torch (seconds of start-up) just to learn that it is there.
    if any(importlib.util.find_spec(name) is None for name in ("torch", "transformers")):
        return None
    # Imported by name, here: the judging models exist only once the app is installed.
    demo = importlib.import_module("judging.demo")
    judge_run = importlib.import_module("judging.models").JudgeRun
    if judge_run.objects.filter(config__name=demo.DEMO_CONFIG).exists():
        return "demo judge run: already done."
    say("demo judge run: a tiny model on CPU, may take minutes (--no-judge skips it) ...")
    run = demo.demo_judge_run()
    if run is None:
        return None
    return f"demo judge run {run.pk} ({demo.DEMO_CONFIG}): {run.status}"


def _panel_names(person: DemoPerson, panels: dict[str, Panel]) -> str:
    chosen = sorted((panels[key] for key in person.panels), key=lambda panel: panel.number)
    return ", ".join(f"{panel.number} {panel.name_en}" for panel in chosen)


class Command(BaseCommand):
    help = (
        "Load the POLLUX catalogue and panels, demo accounts (printed logins), demo "
        "instructions and answers, and build assignments. Idempotent; for local/demo use only."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--force",
            action="store_true",
            help="run even though DEBUG and POLLUX_DEMO are off (creates known passwords!)",
        )
        parser.add_argument(
            "--no-judge",
            action="store_true",
            help="skip the small demo judge run even if the judge extra is installed",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        demo_allowed = settings.DEBUG or getattr(settings, "POLLUX_DEMO", False)
        if not demo_allowed and not options["force"]:
            raise CommandError(
                "seed_demo creates accounts with a published password; it runs only with the "
                "local settings (DEBUG or POLLUX_DEMO on). Pass --force to run it anyway."
            )

        catalogue = load_pollux()
        self.stdout.write(
            "POLLUX catalogue: "
            + (f"loaded {catalogue.created}" if catalogue.changed else "already up to date")
        )
        ensure_default_panels()
        report = demo_seed()
        self.stdout.write(
            "demo data: "
            + (f"created {report.created}" if report.created else "already present, nothing new")
        )
        self.stdout.write(_build_assignments(report.answer_ids))
        # The side-by-side project (REPA): pairs of the demo models' answers, Editing panel.
        pairs = demo_pairs_build(demo_pairs_ensure(report) + demo_past_pairs_ensure(report))
        self.stdout.write(f"side-by-side pairs: {pairs}")
        # Span markups (ПРО//ЧТЕНИЕ): three texts, two experts' markups and an algorithm's each.
        markups = DemoReport()
        demo_markup_ensure(markups)
        self.stdout.write(f"span markups: created {markups.created.get('Markup', 0)}")
        assigned = demo_markup_work_ensure(markups)
        self.stdout.write(f"span markup work: {assigned} texts assigned to experts")
        self.stdout.write(f"markup contest: {demo_contest_ensure(markups)}")
        judge_line = None if options["no_judge"] else _maybe_run_demo_judge(self.stdout.write)
        if judge_line:
            self.stdout.write(judge_line)
        # After the judge run: the leaderboard has the experts' rows and the judge's.
        self.stdout.write(f"leaderboard: {demo_leaderboard_ensure()}")
        # Writing the benchmark and answer generation (#15).
        self.stdout.write(demo_authoring_ensure())
        self.stdout.write(demo_generation_ensure())
        self._print_logins()

    def _print_logins(self) -> None:
        panels = {panel.key: panel for panel in Panel.objects.all()}
        rows = [
            ("admin", DEMO_ADMIN, "everything (Django admin at /admin/)"),
            ("supervisor", DEMO_SUPERVISOR, _panel_names(DEMO_SUPERVISOR, panels)),
            *[("expert", person, _panel_names(person, panels)) for person in DEMO_EXPERTS],
            ("participant", DEMO_PARTICIPANT, "a markup system's runs and the leaderboard"),
        ]
        width = max(len(person.username) for _role, person, _panels in rows)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(f"Demo logins (password for all: {DEMO_PASSWORD})"))
        for role, person, scope in rows:
            name = f"{person.first_name} {person.last_name}"
            self.stdout.write(f"  {role:<11}  {person.username:<{width}}  {name:<18}  {scope}")
        self.stdout.write(
            self.style.SUCCESS(f"Start as the expert '{DEMO_EXPERT}' / '{DEMO_PASSWORD}'.")
        )
        self.stdout.write(
            "Passwords are set when an account is created; an existing account keeps its own."
        )
