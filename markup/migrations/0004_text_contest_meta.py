"""The contest JSON's required meta fields on the text (uuid, test, year): taken out of the
text's `meta` where an import put them there, otherwise a generated uuid, the platform's test
name and the year the text was stored (docs/spans.md)."""
from __future__ import annotations

import uuid

from django.conf import settings
from django.db import migrations, models

import markup.models

MOVED = ("uuid", "test", "year")


def fill(apps, schema_editor):
    MarkupText = apps.get_model("markup", "MarkupText")
    taken = set()
    for text in MarkupText.objects.order_by("pk"):
        meta = dict(text.meta or {})
        given = meta.pop("uuid", None)
        given = given.strip() if isinstance(given, str) else ""
        if not given or len(given) > 200 or given in taken:
            given = str(uuid.uuid4())
        taken.add(given)
        test = meta.pop("test", None)
        test = test.strip() if isinstance(test, str) else ""
        year = meta.pop("year", None)
        valid_year = isinstance(year, int) and not isinstance(year, bool) and 0 < year <= 32767
        text.uuid = given
        text.test = test[:200] or str(settings.POLLUX["MARKUP_TEST"])
        text.year = year if valid_year else text.created_at.year
        text.meta = meta
        text.save(update_fields=["uuid", "test", "year", "meta"])


def unfill(apps, schema_editor):
    MarkupText = apps.get_model("markup", "MarkupText")
    for text in MarkupText.objects.all():
        text.meta = {**(text.meta or {}), "uuid": text.uuid, "test": text.test, "year": text.year}
        text.save(update_fields=["meta"])


class Migration(migrations.Migration):
    dependencies = [("markup", "0003_contest")]

    operations = [
        migrations.AddField(
            model_name="markuptext",
            name="uuid",
            field=models.CharField(max_length=200, null=True),
        ),
        migrations.AddField(
            model_name="markuptext",
            name="test",
            field=models.CharField(max_length=200, null=True),
        ),
        migrations.AddField(
            model_name="markuptext",
            name="year",
            field=models.PositiveSmallIntegerField(null=True),
        ),
        migrations.RunPython(fill, unfill),
        migrations.AlterField(
            model_name="markuptext",
            name="uuid",
            field=models.CharField(
                default=markup.models.new_text_uuid, max_length=200, unique=True
            ),
        ),
        migrations.AlterField(
            model_name="markuptext",
            name="test",
            field=models.CharField(default=markup.models.default_markup_test, max_length=200),
        ),
        migrations.AlterField(
            model_name="markuptext",
            name="year",
            field=models.PositiveSmallIntegerField(default=markup.models.current_year),
        ),
    ]
