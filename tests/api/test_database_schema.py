"""A database whose tables are not this release's (`manage.py migrate` not run: a new installation, a DATABASE_URL
naming another database, an upgrade's code started before its migrations) answers 503 `databaseNotMigrated`, and the
log says what to do; every request was a 500 `internalError` ("no such table: outbox_outboxtask")."""

import logging
from contextlib import contextmanager

import pytest
from django.db import connection
from rest_framework.test import APIClient

from magiclinks.models import MagicLink
from platform_site.api import errors, health
from tests.magiclinks.test_pages import make_link
from tests.tenancy import assert_problem

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


@contextmanager
def _renamed(away: str, back: str):
    """A table or a column renamed away while the block runs (`away` and `back`: the two ALTER TABLE statements):
    to the code, not migrated yet."""
    with connection.cursor() as cursor:
        cursor.execute(away)
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(back)


def _table_missing(table: str):
    return _renamed(f"ALTER TABLE {table} RENAME TO {table}_aside", f"ALTER TABLE {table}_aside RENAME TO {table}")


@pytest.fixture(autouse=True)
def _checked_afresh(monkeypatch):
    """Each test finds the migrations and logs the cause anew (a process keeps "all applied" for good)."""
    monkeypatch.setattr(errors, "_causes_logged", {})
    monkeypatch.setattr(health, "_migrations", {"applied": False, "checked_at": None, "lock": health.threading.Lock()})


def test_a_database_behind_the_release_answers_503_until_it_is_migrated(api_client, core_user, monkeypatch, caplog):
    with _table_missing("outbox_outboxtask"), caplog.at_level(logging.ERROR, logger="platform_site.api.errors"):
        health = APIClient().get("/health")
        problem = assert_problem(health, 503, "databaseNotMigrated")
    assert health["Retry-After"] == "60"
    assert problem["detail"] == "The API's database is being set up or upgraded; try again in a minute."
    [line] = [r.getMessage() for r in caplog.records if "databaseNotMigrated" in r.getMessage()]
    assert "run `manage.py migrate` with this DATABASE_URL" in line and "outbox_outboxtask" in line
    # A column that is not there yet is the same (an upgrade's code on the schema before it)
    assert (
        api_client.post(
            f"/services/fields/api/users/{core_user.pk}/growers", {"name": "Smith"}, format="json"
        ).status_code
        == 201
    )
    column = "ALTER TABLE fields_grower RENAME COLUMN {} TO {}"
    with _renamed(column.format("name", "name_aside"), column.format("name_aside", "name")):
        assert_problem(api_client.get("/services/fields/api/growers"), 503, "databaseNotMigrated")
    # Once migrated, it serves
    assert APIClient().get("/health").status_code == 200
    assert api_client.get("/services/fields/api/growers").status_code == 200


def test_a_link_page_on_a_database_behind_the_release_asks_to_try_again(client, core_user):
    _, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    with _table_missing("magiclinks_magiclink"):
        page = client.get(url)
    assert page.status_code == 503 and page["Retry-After"] == "60"
    assert client.get(url).status_code == 200


def test_health_answers_503_while_a_migration_of_the_release_is_not_applied(caplog):
    """A table the outbox does not use, made by a migration not yet applied: the requests that meet it answered 503,
    and /health 200, so a balancer sent requests there."""
    from django.db.migrations.recorder import MigrationRecorder

    applied = MigrationRecorder.Migration.objects.filter(app="fields").order_by("-id").first()
    MigrationRecorder.Migration.objects.filter(pk=applied.pk).delete()
    try:
        with caplog.at_level(logging.ERROR, logger="platform_site.api.errors"):
            answer = APIClient().get("/health")
            cached = APIClient().get("/health")  # (logged once a minute, not at each check)
            health._migrations["checked_at"] = None
            again = APIClient().get("/health")  # read again: still behind
        problem = assert_problem(answer, 503, "databaseNotMigrated")
        assert_problem(cached, 503, "databaseNotMigrated")
        assert_problem(again, 503, "databaseNotMigrated")
        assert answer["Retry-After"] == "60" and problem["detail"] == errors.NOT_MIGRATED_DETAIL
        [line] = [r.getMessage() for r in caplog.records if "databaseNotMigrated" in r.getMessage()]
        assert line.endswith(
            f"run `manage.py migrate` with this DATABASE_URL: 1 to apply, the first fields.{applied.name}"
        )
    finally:
        MigrationRecorder.Migration.objects.create(app=applied.app, name=applied.name, applied=applied.applied)
    health._migrations["checked_at"] = None  # (asked again at once, not after MIGRATIONS_CHECK_SECONDS)
    assert APIClient().get("/health").status_code == 200
