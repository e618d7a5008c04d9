"""The outputs' run stops being checked by the database while generation 0003 gives the
generation runs their new ids in the run table (runs.Run); generation 0004 checks it again."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("generation", "0001_initial"),
    ]

    operations = [
        migrations.AlterField(
            model_name="generation",
            name="run",
            field=models.ForeignKey(
                db_constraint=False,
                on_delete=django.db.models.deletion.CASCADE,
                related_name="outputs",
                to="generation.generationrun",
            ),
        ),
    ]
