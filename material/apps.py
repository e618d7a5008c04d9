from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class MaterialConfig(AppConfig):
    name = "material"
    verbose_name = _("Material")
