"""Pauses move from the expert to the membership (a pause is per panel), and control items stop
reserving their source answer for every panel (it stays real work for the other panels)."""

from django.db import migrations, models


def pauses_to_memberships(apps, schema_editor):
    Expert = apps.get_model("panels", "Expert")
    Membership = apps.get_model("panels", "Membership")
    # A pause used to hold in every panel: each membership of a paused expert keeps it.
    for expert_id, reason in Expert.objects.filter(is_paused=True).values_list(
        "pk", "paused_reason"
    ):
        Membership.objects.filter(expert_id=expert_id).update(is_paused=True, paused_reason=reason)


def pauses_to_experts(apps, schema_editor):
    Expert = apps.get_model("panels", "Expert")
    Membership = apps.get_model("panels", "Membership")
    for expert_id, reason in Membership.objects.filter(is_paused=True).values_list(
        "expert_id", "paused_reason"
    ):
        Expert.objects.filter(pk=expert_id).update(is_paused=True, paused_reason=reason)


def unreserve_control_sources(apps, schema_editor):
    ControlItem = apps.get_model("panels", "ControlItem")
    ReservedAnswer = apps.get_model("panels", "ReservedAnswer")
    # Only the gold source answers: the delivered copies (with a source) stay reserved.
    ReservedAnswer.objects.filter(
        purpose="control",
        source__isnull=True,
        answer_id__in=ControlItem.objects.values("answer_id"),
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("panels", "0005_control_references_action"),
    ]

    operations = [
        migrations.AddField(
            model_name="membership",
            name="is_paused",
            field=models.BooleanField(default=False),
        ),
        migrations.AddField(
            model_name="membership",
            name="paused_reason",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.RunPython(pauses_to_memberships, pauses_to_experts),
        migrations.RunPython(unreserve_control_sources, migrations.RunPython.noop),
        migrations.RemoveField(model_name="expert", name="is_paused"),
        migrations.RemoveField(model_name="expert", name="paused_reason"),
    ]
