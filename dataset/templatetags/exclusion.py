"""`{{ reason|excluded_label }}`: why a triple is out of the dataset, in the page's language."""

from __future__ import annotations

from django import template

from dataset import models

register = template.Library()


@register.filter
def excluded_label(reason: str) -> str:
    return models.excluded_label(reason or "")
