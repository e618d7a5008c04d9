"""markup_llm_run: an LLM marks every text of a pull sample through an OpenAI-compatible endpoint
(the judge worker's backend; `python -m judge_worker.server` serves a local model so) and is
scored like any participant's system (markup.llm)."""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from judge_worker.backends.openai_compat import OpenAIBackend
from markup import contest
from markup.llm import llm_markup_run
from markup.models import MarkupSample
from participants.models import Participant


class Command(BaseCommand):
    help = "Mark up a sample's texts with an LLM (OpenAI-compatible endpoint) as a participant."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--sample", type=int, required=True, help="the sample's id")
        parser.add_argument(
            "--participant", required=True, help="the username of the participant it runs as"
        )
        parser.add_argument("--system", required=True, help="the system's name on the board")
        parser.add_argument("--endpoint", required=True, help="base URL, e.g. http://host/v1")
        parser.add_argument("--model", required=True, help="the endpoint's model name")
        parser.add_argument(
            "--api-key-env", default="", help="the environment variable holding the API key"
        )
        parser.add_argument("--max-tokens", type=int, default=1024)

    def handle(self, *args: Any, **options: Any) -> None:
        sample = MarkupSample.objects.filter(pk=options["sample"]).first()
        if sample is None:
            raise CommandError(f"no sample {options['sample']}")
        participant = Participant.objects.filter(
            user__username=options["participant"], approved=True
        ).first()
        if participant is None:
            raise CommandError(f"no approved participant {options['participant']!r}")
        key = os.environ.get(options["api_key_env"], "") if options["api_key_env"] else ""
        backend = OpenAIBackend(
            options["endpoint"],
            options["model"],
            api_key=key or None,
            max_new_tokens=options["max_tokens"],
            concurrency=1,
        )
        try:
            report = llm_markup_run(
                sample, participant, options["system"], backend, say=self.stdout.write
            )
        except contest.RunRefused as refused:
            raise CommandError(str(refused)) from refused
        star = "—" if report.star is None else f"{report.star:.2f} %"
        self.stdout.write(
            f"run {report.run.pk}: {report.answered}/{report.texts} texts answered, "
            f"{report.annulled} annulled, СТАР {star}"
        )
