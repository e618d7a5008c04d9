from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class WorkConfig(AppConfig):
    name = "work"
    verbose_name = _("Work")
