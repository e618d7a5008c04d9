"""Reference scores belong to a panel.

Existing rows are given to the panels that use them: each panel with a control item on the
answer (a row is copied once per such panel), else the panel of the answer's triple of that
criterion, else the one panel its author supervises. A row none of these attributes is deleted:
no panel can reach it.
"""

import django.db.models.deletion
from django.db import migrations, models


def assign_panels(apps, schema_editor):
    Reference = apps.get_model("annotation", "ReferenceEstimate")
    Triple = apps.get_model("annotation", "Triple")
    ControlItem = apps.get_model("panels", "ControlItem")
    Panel = apps.get_model("panels", "Panel")
    for ref in Reference.objects.filter(panel__isnull=True):
        panels = list(
            ControlItem.objects.filter(answer_id=ref.answer_id)
            .order_by("panel_id")
            .values_list("panel_id", flat=True)
        )
        if not panels:
            triple_panel = (
                Triple.objects.filter(answer_id=ref.answer_id, criterion_id=ref.criterion_id)
                .values_list("panel_id", flat=True)
                .first()
            )
            if triple_panel is not None:
                panels = [triple_panel]
        if not panels and ref.author_id is not None:
            supervised = list(
                Panel.objects.filter(supervisors=ref.author_id).values_list("pk", flat=True)
            )
            if len(supervised) == 1:
                panels = supervised
        if not panels:
            ref.delete()
            continue
        ref.panel_id = panels[0]
        ref.save(update_fields=["panel"])
        for panel_id in panels[1:]:
            Reference.objects.create(
                answer_id=ref.answer_id,
                criterion_id=ref.criterion_id,
                panel_id=panel_id,
                score=ref.score,
                is_na=ref.is_na,
                comment=ref.comment,
                author_id=ref.author_id,
            )
    if schema_editor.connection.vendor == "postgresql":
        # The foreign keys' deferred checks must run now: the table is altered next.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0006_triple_redundant_indexes"),
        ("panels", "0006_membership_pause"),
    ]

    operations = [
        migrations.RemoveConstraint(model_name="referenceestimate", name="reference_unique"),
        migrations.AddField(
            model_name="referenceestimate",
            name="panel",
            field=models.ForeignKey(
                null=True,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="references",
                to="panels.panel",
            ),
        ),
        migrations.RunPython(assign_panels, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="referenceestimate",
            name="panel",
            field=models.ForeignKey(
                on_delete=django.db.models.deletion.CASCADE,
                related_name="references",
                to="panels.panel",
            ),
        ),
        migrations.AddConstraint(
            model_name="referenceestimate",
            constraint=models.UniqueConstraint(
                fields=("answer", "criterion", "panel"), name="reference_unique_per_panel"
            ),
        ),
    ]
