from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class TaxonomyConfig(AppConfig):
    name = "taxonomy"
    verbose_name = _("Taxonomy and criteria")
