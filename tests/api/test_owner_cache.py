"""The owner (and core user) a token names is kept between requests on PostgreSQL, and forgotten as soon as a change
to either is announced: a revoked token or a deleted core user is refused at once, whoever made the change. Real
gunicorn on loopback over the test database, changes committed from this process; the cache's own rules without a
database."""

import threading
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_delete, owner_delete
from platform_site.api.authentication import token_issue
from platform_site.api.owner_cache import OwnerCache
from tests.api.raw_http import intersects_status, status_of
from tests.factories import CoreUserFactory, OwnerFactory

FIELDS = "/services/fields/api/fields"
SETTLE_SECONDS = 2.0  # how long a change's announcement may take to reach the server (it takes under a millisecond)


def _locked_out(tables: str, seconds: float, call) -> tuple[list, list]:
    """Run `call` in a thread while this test holds `tables` locked against any reader for `seconds`: (what it
    answered while they were locked, what it answered in the end)."""
    answered: list = []
    thread = threading.Thread(target=lambda: answered.append(call()), daemon=True)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(f"LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")
        thread.start()
        thread.join(seconds)
        during = list(answered)
    thread.join(30)
    return during, answered


def _eventually(expected: int, call) -> int:
    """What `call` answers once it answers `expected`, or its last answer after SETTLE_SECONDS."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while True:
        answer = call()
        if answer == expected or time.monotonic() > deadline:
            return answer
        time.sleep(0.02)


def _listener_sessions(name: str) -> list[int]:
    """The server's listening sessions that have run their LISTEN (a session shows in `pg_stat_activity` as soon as
    it connects, before it listens: a request answered in between was not kept, and a test once failed so)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity"
            " WHERE application_name = %s AND state = 'idle' AND query LIKE 'LISTEN %%'",
            [f"{name}/owner-cache"],
        )
        return [pid for (pid,) in cursor.fetchall()]


def _listening(name: str, *, besides: tuple = ()) -> list[int]:
    deadline = time.monotonic() + 10
    while not (pids := [pid for pid in _listener_sessions(name) if pid not in besides]):
        assert time.monotonic() < deadline, "the server's owner-cache listener did not connect"
        time.sleep(0.05)
    time.sleep(0.2)  # (the listener tells the cache it serves right after its LISTEN answered: that moment)
    return pids


@pytest.fixture
def served(gunicorn_server):
    """(base URL, application name, owner, core user, token) on a server that has answered once for them, so it
    keeps them."""
    base, name = gunicorn_server
    owner = OwnerFactory()
    core_user = CoreUserFactory(owner=owner)
    token = token_issue(owner)
    assert intersects_status(base, token, core_user.id) == 200  # (the server starts listening at its first request)
    _listening(name)
    assert intersects_status(base, token, core_user.id) == 200
    assert status_of(base, FIELDS, token) == 200
    return base, name, owner, core_user, token


def test_an_unchanged_owner_and_core_user_are_not_read_again(served):
    base, _, _, core_user, token = served
    # While both tables are locked against any reader, the requests still answer: they read neither
    during, _ = _locked_out("auth_user, accounts_coreuser", 5, lambda: intersects_status(base, token, core_user.id))
    assert during == [200]
    during, _ = _locked_out("auth_user", 5, lambda: status_of(base, FIELDS, token))
    assert during == [200]


def test_a_server_without_the_cache_reads_them_on_every_request(gunicorn_server_env):
    # AUTH_CACHE_SECONDS=0: the same requests wait for the locked tables (what the test above would see uncached)
    base = gunicorn_server_env({"AUTH_CACHE_SECONDS": "0"})
    owner = OwnerFactory()
    core_user = CoreUserFactory(owner=owner)
    token = token_issue(owner)
    assert intersects_status(base, token, core_user.id) == 200
    during, after = _locked_out("auth_user, accounts_coreuser", 1, lambda: intersects_status(base, token, core_user.id))
    assert (during, after) == ([], [200])


def test_another_core_user_of_the_owner_is_read_and_a_missing_one_is_never_kept(served):
    base, _, owner, _, token = served
    missing = "6f1d2c9a-0000-4000-8000-000000000000"
    assert intersects_status(base, token, missing) == 404
    # A core user created after the server found none of that id is found at once
    CoreUser.objects.create(id=missing, owner=owner, name="Late")
    assert intersects_status(base, token, missing) == 200


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("password", 401),
        ("deactivate", 401),
        ("delete owner", 401),
        ("delete core user", 404),
        ("plain SQL", 401),
    ],
)
def test_a_change_is_heard_by_the_server_at_once(served, change, expected):
    base, _, owner, core_user, token = served
    # When the owner or the core user changes, committed by another process
    if change == "password":
        owner.set_password("another-password")
        owner.save()
    elif change == "deactivate":
        get_user_model().objects.filter(pk=owner.pk).update(is_active=False)
    elif change == "delete owner":
        owner_delete(owner=owner)
    elif change == "delete core user":
        core_user_delete(core_user=core_user)
    else:
        with connection.cursor() as cursor:
            cursor.execute("UPDATE auth_user SET password = 'changed' || password WHERE id = %s", [owner.pk])
    # Then the server refuses the token (or finds no core user) as soon as the change's announcement reaches it
    assert _eventually(expected, lambda: intersects_status(base, token, core_user.id)) == expected


def test_after_losing_its_connection_the_server_reads_owners_again_until_it_listens_anew(served):
    base, name, _, core_user, token = served
    (listener,) = _listening(name)
    # When PostgreSQL ends the server's listening session (a restart, an administrator)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [listener])
    # Then it listens again on a new session, having forgotten what it kept: the next request reads the owner
    _listening(name, besides=(listener,))
    during, after = _locked_out("auth_user, accounts_coreuser", 1, lambda: intersects_status(base, token, core_user.id))
    assert (during, after) == ([], [200])
    # And it keeps it again from then on
    during, _ = _locked_out("auth_user, accounts_coreuser", 5, lambda: intersects_status(base, token, core_user.id))
    assert during == [200]


def _owner_reads(client, url) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url).status_code == 200
    return sum('"auth_user"' in query["sql"] for query in queries.captured_queries)


@pytest.mark.embedded
@pytest.mark.django_db(transaction=True)
def test_postgresql_keeps_the_owner_and_the_embedded_default_reads_it_every_time(owner_cache_on, owner, make_client):
    client = make_client(owner)
    url = "/services/usermanagement/api/users"
    reads = [_owner_reads(client, url)]
    deadline = time.monotonic() + 10
    while len(reads) < 20 or (connection.vendor == "postgresql" and reads[-1] and time.monotonic() < deadline):
        reads.append(_owner_reads(client, url))
        time.sleep(0.02)
    if connection.vendor == "postgresql":
        # Once the process listens for changes (a moment after its first request), the owner is read no more
        assert reads[0] == 1 and reads[-1] == 0
    else:
        # SpatiaLite announces nothing: every request reads the owner
        assert set(reads) == {1}


# The cache's own rules


class Row:
    def __init__(self, value):
        self.value = value


def _fetcher(*pairs):
    calls = []

    def fetch():
        calls.append(1)
        return pairs[min(len(calls), len(pairs)) - 1]

    return fetch, calls


def _complete(pair):
    return pair[0] is not None


def test_nothing_is_kept_until_the_listener_serves():
    cache = OwnerCache(max_age=30)
    fetch, calls = _fetcher((Row(1), None))
    cache.lookup("k", fetch, complete=_complete)
    cache.lookup("k", fetch, complete=_complete)
    assert len(calls) == 2 and len(cache) == 0


def test_a_kept_pair_is_answered_as_copies():
    cache = OwnerCache(max_age=30)
    cache.serve(True)
    fetch, calls = _fetcher((Row(1), Row(2)))
    first = cache.lookup("k", fetch, complete=_complete)
    first[0].value = "changed by a request"
    second = cache.lookup("k", fetch, complete=_complete)
    third = cache.lookup("k", fetch, complete=_complete)
    assert len(calls) == 1
    assert (second[0].value, second[1].value) == (1, 2)
    assert second[0] is not third[0] and second[1] is not third[1]


def test_a_read_that_raced_an_announced_change_is_not_kept():
    cache = OwnerCache(max_age=30)
    cache.serve(True)

    def fetch_while_changed():
        cache.changed()  # announced after the read began: the read may predate the commit
        return Row(1), None

    cache.lookup("k", fetch_while_changed, complete=_complete)
    assert len(cache) == 0


@pytest.mark.parametrize("event", ["changed", "lost", "reconnected"])
def test_an_announcement_or_the_listener_connecting_or_failing_forgets_everything(event):
    cache = OwnerCache(max_age=30)
    cache.serve(True)
    fetch, calls = _fetcher((Row(1), None))
    cache.lookup("k", fetch, complete=_complete)
    {"changed": cache.changed, "lost": lambda: cache.serve(False), "reconnected": lambda: cache.serve(True)}[event]()
    cache.lookup("k", fetch, complete=_complete)
    assert len(calls) == 2


def test_incomplete_lookups_are_not_kept_and_old_entries_are_read_again():
    cache = OwnerCache(max_age=0.05)
    cache.serve(True)
    fetch, calls = _fetcher((None, None))
    cache.lookup("missing", fetch, complete=_complete)
    cache.lookup("missing", fetch, complete=_complete)
    assert len(calls) == 2
    fetch, calls = _fetcher((Row(1), None))
    cache.lookup("k", fetch, complete=_complete)
    cache.lookup("k", fetch, complete=_complete)
    assert len(calls) == 1
    time.sleep(0.06)
    cache.lookup("k", fetch, complete=_complete)
    assert len(calls) == 2


def test_the_cache_keeps_at_most_its_bound_the_newest_first():
    cache = OwnerCache(max_age=30, max_entries=2)
    cache.serve(True)
    for key in ("a", "b", "c"):
        cache.lookup(key, lambda key=key: (Row(key), None), complete=_complete)
    assert len(cache) == 2
    fetch, calls = _fetcher((Row("a"), None))
    cache.lookup("a", fetch, complete=_complete)
    assert len(calls) == 1  # "a", the oldest, was dropped
    fetch, calls = _fetcher((Row("c"), None))
    cache.lookup("c", fetch, complete=_complete)
    assert len(calls) == 0
