from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class GuidelinesConfig(AppConfig):
    name = "guidelines"
    verbose_name = _("Guidelines")
