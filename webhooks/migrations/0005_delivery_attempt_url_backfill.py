"""Attempts recorded before their URL was kept (0004) get their webhook's URL as it is now: the best account of
where they went, fixed from here on, where `failed-calls` read the webhook's current URL and an edit in the admin
made every earlier attempt name the new address."""

from django.db import migrations
from django.db.models import OuterRef, Subquery


def backfill(apps, schema_editor):
    Delivery = apps.get_model("webhooks", "Delivery")
    DeliveryAttempt = apps.get_model("webhooks", "DeliveryAttempt")
    webhook_url = Delivery.objects.filter(pk=OuterRef("delivery_id")).values("webhook__url")[:1]
    DeliveryAttempt.objects.filter(url="").update(url=Subquery(webhook_url))


class Migration(migrations.Migration):
    dependencies = [
        ("webhooks", "0004_delivery_attempt_url"),
    ]

    operations = [
        migrations.RunPython(backfill, migrations.RunPython.noop, elidable=True),
    ]
