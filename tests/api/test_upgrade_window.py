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


def test_old_code_connects_a_provider_without_the_token_server(core_user):
    """accounts.0009 added `token_server` with no database default: in the upgrade window a grower's provider
    connection answered 500 on the callback, and the tokens the provider had just issued were lost (upgrade review)."""
    from platform_site.accounts.models import ProviderCredential

    kept = ProviderCredential.objects.create(core_user=core_user, provider="ProviderA", access_token="a")
    # Another provider's credential, written as the version before (e04a252) wrote one: every column but this one
    columns = ", ".join(
        field.column
        for field in ProviderCredential._meta.concrete_fields
        if field.name not in {"id", "provider", "token_server"}
    )
    new_id, kept_id = (ProviderCredential._meta.pk.get_db_prep_value(pk, connection) for pk in (uuid.uuid4(), kept.pk))
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO accounts_providercredential (id, provider, {columns}) "
            f"SELECT %s, %s, {columns} FROM accounts_providercredential WHERE id = %s",
            [new_id, "ProviderB", kept_id],
        )
    assert ProviderCredential.objects.get(provider="ProviderB").token_server == ""


# A column these migrations added that the code before them cannot fill: upgrading across them, gunicorn is stopped
# while `migrate` runs (README "Production").
NO_DEFAULT_FOR_THE_CODE_BEFORE = {("fields", "field", "public_id")}


def test_every_column_a_migration_adds_takes_the_inserts_of_the_code_before():
    """A NOT NULL column added after an app's first migration has a database default, so that the version before,
    serving on the new schema until its restart, can still insert rows (`db_default`; Django's `default` is kept in
    Python only). Found in the code already: `request_id` twice, `token_server`, `sweep_attempts`, `warnings`,
    `task_retries`."""
    from django.apps import apps
    from django.db.migrations.loader import MigrationLoader
    from django.db.migrations.operations import AddField
    from django.db.models import NOT_PROVIDED

    loader = MigrationLoader(None, ignore_no_migrations=True)
    added = {
        (app, operation.model_name, operation.name)
        for (app, _name), migration in loader.disk_migrations.items()
        if not migration.initial and app in {config.label for config in apps.get_app_configs()}
        for operation in migration.operations
        if isinstance(operation, AddField)
    }
    assert ("webhooks", "delivery", "request_id") in added  # (the scan reads the migrations)
    refused = []
    for app, model, name in sorted(added - NO_DEFAULT_FOR_THE_CODE_BEFORE):
        field = apps.get_model(app, model)._meta.get_field(name)
        if field.concrete and not field.many_to_many and not field.null and field.db_default is NOT_PROVIDED:
            refused.append(f"{app}.{model}.{name}")
    assert refused == []


def test_the_models_and_their_migrations_agree():
    """A change to a model without its migration would leave the schema the code expects unbuilt."""
    import io

    from django.core.management import call_command

    output = io.StringIO()
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=output)
    except SystemExit:
        pytest.fail("a model changed without its migration:\n" + output.getvalue())
