"""Migrations of the webhooks app that change data: run forwards over rows written in the older schema."""

import pytest

from tests.migrating import migrate, migrate_latest

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.embedded,
    pytest.mark.usefixtures("latest_schema_after"),
]

BEFORE = ("webhooks", "0003_delivery_request_id")


def test_attempts_recorded_before_their_url_was_kept_keep_the_webhooks_url_of_the_upgrade(owner, make_client):
    """`failed-calls` named the webhook's current URL for them: an edit in the admin after the upgrade made every
    earlier attempt name an address it was never posted to."""
    from django.utils import timezone

    old = migrate(BEFORE)
    Webhook, Delivery, DeliveryAttempt = (
        old.get_model("webhooks", m) for m in ("Webhook", "Delivery", "DeliveryAttempt")
    )
    webhook = Webhook.objects.create(owner_id=owner.pk, name="hook", url="https://old.example/hook", secret="s" * 32)
    delivery = Delivery.objects.create(
        webhook=webhook, owner_id=owner.pk, event="fieldCreated", body="{}", next_attempt_at=timezone.now()
    )
    attempt = DeliveryAttempt.objects.create(delivery=delivery, number=1, status_code=500, will_retry=True)

    migrate_latest()  # (0005 fills the URLs; the API reads the latest schema)
    from webhooks.models import Webhook as CurrentWebhook

    CurrentWebhook.objects.filter(pk=webhook.pk).update(url="https://new.example/hook")  # edited in the admin
    answer = make_client(owner).get("/services/alerts/api/alerts/webhooks/failed-calls")
    assert answer.status_code == 200, answer.content[:300]
    calls = {call["id"]: call for call in answer.json()}
    assert calls[str(attempt.pk)]["url"] == "https://old.example/hook"


def test_failed_attempts_recorded_before_their_owner_was_kept_are_listed_for_their_owner_alone(
    owner, other_owner, make_client
):
    """`failed-calls` reads the attempts by their own owner now (0006): those recorded before it get their
    delivery's."""
    from django.utils import timezone

    old = migrate(("webhooks", "0005_delivery_attempt_url_backfill"))
    Webhook, Delivery, DeliveryAttempt = (
        old.get_model("webhooks", m) for m in ("Webhook", "Delivery", "DeliveryAttempt")
    )
    attempts = {}
    for who in (owner, other_owner):
        webhook = Webhook.objects.create(owner_id=who.pk, name="hook", url="https://a.example/hook", secret="s" * 32)
        delivery = Delivery.objects.create(
            webhook=webhook, owner_id=who.pk, event="fieldCreated", body="{}", next_attempt_at=timezone.now()
        )
        attempts[who.pk] = DeliveryAttempt.objects.create(delivery=delivery, number=1, status_code=500).pk

    migrate_latest()  # (0006 fills the owners)
    for who in (owner, other_owner):
        answer = make_client(who).get("/services/alerts/api/alerts/webhooks/failed-calls")
        assert answer.status_code == 200, answer.content[:300]
        assert [call["id"] for call in answer.json()] == [str(attempts[who.pk])]
