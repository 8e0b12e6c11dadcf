"""The API server keeps its PostgreSQL connection between requests and replaces it, before use, when the server has
ended it (a restart, an administrator's `pg_terminate_backend`, an idle timeout): the next request answers as
usual instead of failing. Real gunicorn on loopback over the test database."""

import time

import pytest
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


def test_a_database_that_cannot_be_reached_is_503_to_try_again(gunicorn_server_env):
    """PostgreSQL stopped or unreachable: a 503 problem with Retry-After, which a client may retry; it was a 500
    `internalError`, which says a fault of ours."""
    import json
    import urllib.error
    import urllib.request

    from django.conf import settings

    from platform_site.api.authentication import token_issue
    from tests.factories import OwnerFactory
    from tests.receiver import unused_port

    token = token_issue(OwnerFactory())
    db = settings.DATABASES["default"]
    nowhere = f"postgis://{db['USER']}:{db['PASSWORD']}@127.0.0.1:{unused_port()}/{db['NAME']}"
    base = gunicorn_server_env({"DATABASE_URL": nowhere})
    for path, body in (
        ("/services/usermanagement/api/users", None),
        ("/api/authenticate", b'{"username": "a", "password": "some password"}'),
        ("/health", None),  # (a load balancer takes the instance out)
    ):
        request = urllib.request.Request(
            base + path,
            data=body,
            headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request, timeout=30)
        problem = json.loads(answer.value.read())
        assert (answer.value.code, problem["errorKey"]) == (503, "databaseUnavailable"), problem
        assert answer.value.headers["Retry-After"] == "5"
        assert answer.value.headers["Content-Type"] == "application/problem+json"
    # A grower's link page says it in words (it was the 500 of a fault, in JSON)
    with pytest.raises(urllib.error.HTTPError) as page:
        urllib.request.urlopen(base + "/links/a-token-of-a-link", timeout=30)
    assert (page.value.code, page.value.headers["Retry-After"]) == (503, "5")
    assert "Try again in a moment" in page.value.read().decode()
    # An operator signed in to the admin (a session to read): the same 503 problem (it was the 500 of a fault)
    signed_in = {"Cookie": "sessionid=a0b1c2d3e4f5g6h7i8j9k0l1m2n3o4p5"}
    for path in ("/admin/", "/admin/fields/field/"):
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(urllib.request.Request(base + path, headers=signed_in), timeout=30)
        problem = json.loads(answer.value.read())
        assert (answer.value.code, problem["errorKey"]) == (503, "databaseUnavailable"), (path, problem)
        assert answer.value.headers["Retry-After"] == "5"
    # Pages that need no database still answer: the admin's login form (no one signed in), the API's documentation
    for path in ("/admin/login/", "/api/docs/"):
        with urllib.request.urlopen(base + path, timeout=30) as page:
            assert page.status == 200


def test_the_cause_of_a_database_that_cannot_be_reached_is_logged(gunicorn_server_env, tmp_path):
    """A wrong password answered every request as a stopped server does (503 `databaseUnavailable`, rightly: the
    client can only wait), and the cause was written nowhere: an operator saw "Service Unavailable" lines only. It
    is logged once a minute, not at every request of an outage."""
    import urllib.error
    import urllib.request

    from django.conf import settings

    db = settings.DATABASES["default"]
    wrong = f"postgis://{db['USER']}:not-the-password@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    output = tmp_path / "gunicorn.log"
    with open(output, "w") as written:
        base = gunicorn_server_env({"DATABASE_URL": wrong}, written)
        for _ in range(3):
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(base + "/health", timeout=30)
            assert answer.value.code == 503
    time.sleep(0.2)
    causes = [line for line in output.read_text().splitlines() if "cannot be reached (answered 503" in line]
    assert len(causes) == 1 and "password authentication failed" in causes[0], output.read_text()[-3000:]
