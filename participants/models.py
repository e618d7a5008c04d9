"""Participants: the people whose systems are evaluated (an algorithmic markup's author today;
model submissions and leaderboards build on the same role). A participant is neither an expert
nor staff: he sees his own runs and the scores the platform publishes, never reference data,
other participants' outputs or expert identities."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _


class Participant(models.Model):
    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="participant"
    )
    # The team or organisation shown beside its systems.
    organisation = models.CharField(max_length=200, blank=True)
    # An admin approves a participant before his runs are accepted.
    approved = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = _("participant")
        verbose_name_plural = _("participants")

    def __str__(self) -> str:
        return self.organisation or self.user.get_username()
