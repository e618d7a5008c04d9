from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import pgettext_lazy


class GuidelinesConfig(AppConfig):
    name = "guidelines"
    verbose_name = pgettext_lazy("panel guidelines", "Guidelines")
