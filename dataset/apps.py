from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DatasetConfig(AppConfig):
    name = "dataset"
    verbose_name = _("Dataset")
