from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class PanelsConfig(AppConfig):
    name = "panels"
    verbose_name = _("Panels and experts")
