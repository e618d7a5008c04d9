from __future__ import annotations

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class DiscussionConfig(AppConfig):
    name = "discussion"
    verbose_name = _("Comments")
