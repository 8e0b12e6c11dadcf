"""Between `migrate` and the restart of the API (README "Production": to upgrade), the code of the version before
serves on the new schema: a column a migration adds must take that code's inserts, which do not name it. Django
keeps a field's `default` in Python only: a NOT NULL column added without a database default refused every insert
of the old code (a 500 for every change that fired a webhook)."""

import uuid

import pytest
from django.db import connection
from django.utils import timezone

from platform_site.outbox.models import OutboxTask
from webhooks.models import Delivery
from webhooks.services import event_emit

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def test_old_code_records_a_delivery_without_its_request_id(owner, core_user, subscribe, webhook_receiver):
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "f-1"})
    kept = Delivery.objects.get()
    # The columns of the version before (7afb3e5), as its ORM wrote them
    columns = (
        "webhook_id, owner_id, event, core_user_id, body, status, attempts, next_attempt_at, created_at, updated_at"
    )
    new_id = Delivery._meta.pk.get_db_prep_value(uuid.uuid4(), connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO webhooks_delivery (id, {columns}) SELECT %s, {columns} FROM webhooks_delivery WHERE id = %s",
            [new_id, Delivery._meta.pk.get_db_prep_value(kept.pk, connection)],
        )
    assert Delivery.objects.exclude(pk=kept.pk).get().request_id == ""


def test_old_code_keeps_a_task_in_the_outbox_without_its_request_id():
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO outbox_outboxtask (task_name, args, created_at) VALUES (%s, %s, %s)",
            ["conversion.tasks.batch_open", '["b-1"]', timezone.now()],
        )
    assert OutboxTask.objects.get().request_id == ""
