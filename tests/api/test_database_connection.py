"""The API server keeps its PostgreSQL connection between requests and replaces it, before use, when the server has
ended it (a restart, an administrator's `pg_terminate_backend`, an idle timeout): the next request answers as
usual instead of failing. Real gunicorn on loopback over the test database."""

import time

from django.db import connection

from tests.api.raw_http import intersects_status


def _server_sessions(name: str) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE application_name = %s", [name])
        return [pid for (pid,) in cursor.fetchall()]


def test_a_connection_the_database_ended_is_replaced_before_the_next_request(gunicorn_server):
    from platform_site.api.authentication import token_issue
    from tests.factories import CoreUserFactory, OwnerFactory

    base, name = gunicorn_server
    owner = OwnerFactory()
    core_user = CoreUserFactory(owner=owner)
    token = token_issue(owner)

    # The server keeps one session across requests
    assert intersects_status(base, token, core_user.id) == 200
    kept = _server_sessions(name)
    assert len(kept) == 1
    assert intersects_status(base, token, core_user.id) == 200
    assert _server_sessions(name) == kept

    # When PostgreSQL ends it, as a restart would
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", kept)
    deadline = time.monotonic() + 10
    while _server_sessions(name) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _server_sessions(name) == []

    # Then the next request answers on a new session
    assert intersects_status(base, token, core_user.id) == 200
    replaced = _server_sessions(name)
    assert len(replaced) == 1
    assert replaced != kept
