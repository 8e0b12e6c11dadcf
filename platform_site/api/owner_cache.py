"""The API owners (and core users) that bearer authentication reads on every request, kept between requests while
PostgreSQL announces every change to them.

Every authenticated request read its owner, with the path's core user, from the database: a round trip that cost
0.3 to 1 ms on loopback, about half of what a do-nothing authenticated request costs. This keeps what was read in
memory and forgets all of it whenever a row of either table changes:
- triggers (migration accounts 0006) `NOTIFY platform_owners_changed` on every UPDATE, DELETE or TRUNCATE of
  `auth_user` and `accounts_coreuser`, whoever makes it (the API, the admin, a management command, plain SQL in
  psql); PostgreSQL delivers the notification when that transaction commits;
- a thread of each process LISTENs on a connection of its own and empties the cache on every notification;
- the cache serves only while that connection is up: it is emptied when the thread connects (a change made before
  it listened is never served) and when the connection fails, and is bypassed until the thread has connected again;
- a lookup stores what it read only when nothing was announced (and the listener did not drop) between the moment
  it began and the moment it stores, so a read that raced a change is never kept;
- inside a transaction it is bypassed: the connection may hold a change of its own, not yet committed or announced;
- entries are also dropped after AUTH_CACHE_SECONDS (a safety net: a connection lost without a word from the
  server is found by TCP keepalives within about a minute).

So a revoked token (password changed, owner deactivated or deleted) or a deleted core user is refused as soon as
the change's notification has reached the process, a moment after its commit (a fraction of a millisecond on
loopback): the window in which a request reading the row just before that commit would have passed anyway, widened
by the notification's trip. Only rows found are kept (a core user created later is found at once). Each request
gets its own copies of the instances.

PostgreSQL only: SpatiaLite has no notifications (and `manage.py createapiowner` in another process could change
an owner unannounced), so the embedded default reads the database on every request, as does AUTH_CACHE_SECONDS=0
(behind a pooler in transaction mode, such as PgBouncer's, where LISTEN does not hold, set it to 0).
"""

import copy
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

import psycopg
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

logger = logging.getLogger(__name__)

CHANNEL = "platform_owners_changed"
MAX_ENTRIES = 10_000
# The listener's connection: TCP keepalives find a peer gone silent (idle 30 s, then 3 probes 10 s apart).
LISTENER_OPTIONS = {"keepalives": 1, "keepalives_idle": 30, "keepalives_interval": 10, "keepalives_count": 3}
RETRY_SECONDS = (0.2, 30.0)  # first and longest pause before the listener connects again

Pair = tuple[Any, Any]  # (owner or None, core user or None)


class OwnerCache:
    """(key -> (owner, core user)) of lookups that found their rows, served while `serving` and younger than
    `max_age` seconds. Thread-safe; entries are copied in and out, so no request shares an instance."""

    def __init__(self, *, max_age: float, max_entries: int = MAX_ENTRIES):
        self.max_age = max_age
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._entries: OrderedDict[Hashable, tuple[float, Pair]] = OrderedDict()
        self._generation = 0  # moves at every change announced and every connection or loss of the listener
        self._serving = False

    def lookup(self, key: Hashable, fetch: Callable[[], Pair], *, complete: Callable[[Pair], bool]) -> Pair:
        """The pair kept under `key`, or `fetch()`'s, kept when `complete(pair)` (every row asked for was found)."""
        with self._lock:
            generation, serving = self._generation, self._serving
            entry = self._entries.get(key) if serving else None
        if entry is not None and time.monotonic() - entry[0] < self.max_age:
            return _copies(entry[1])
        pair = fetch()
        if serving and complete(pair):
            kept = _copies(pair)
            with self._lock:
                # (A change announced since the lookup began may have been read before its commit: not kept.)
                if self._generation == generation and self._serving:
                    self._entries[key] = (time.monotonic(), kept)
                    self._entries.move_to_end(key)
                    while len(self._entries) > self.max_entries:
                        self._entries.popitem(last=False)
        return pair

    def changed(self) -> None:
        """A change was announced: forget everything."""
        self._reset(serving=None)

    def serve(self, serving: bool) -> None:
        """The listener connected (True) or lost its connection (False): forget everything either way."""
        self._reset(serving=serving)

    def __len__(self) -> int:
        return len(self._entries)

    def _reset(self, *, serving: bool | None) -> None:
        with self._lock:
            self._generation += 1
            self._entries.clear()
            if serving is not None:
                self._serving = serving


def _copies(pair: Pair) -> Pair:
    return tuple(None if instance is None else copy.copy(instance) for instance in pair)


class Listener(threading.Thread):
    """LISTENs for announced changes on a connection of its own and tells `cache`; connects again after a failure,
    the cache bypassed meanwhile."""

    def __init__(self, cache: OwnerCache, connection_params: dict):
        super().__init__(name="owner-cache-listener", daemon=True)
        self.cache = cache
        self._params = connection_params
        self._stopping = threading.Event()

    def run(self) -> None:
        pause = RETRY_SECONDS[0]
        while not self._stopping.is_set():
            try:
                with psycopg.connect(**self._params, autocommit=True) as connection:
                    connection.execute(f"LISTEN {CHANNEL}")
                    self.cache.serve(True)
                    pause = RETRY_SECONDS[0]
                    while not self._stopping.is_set():
                        for _ in connection.notifies(timeout=1.0):
                            self.cache.changed()
            except psycopg.Error as exc:
                logger.warning("owner cache: listening for changes failed (%s); reading owners from the database", exc)
            finally:
                self.cache.serve(False)
            self._stopping.wait(pause)
            pause = min(pause * 2, RETRY_SECONDS[1])

    def stop(self, timeout: float = 5.0) -> None:
        self._stopping.set()
        self.join(timeout)


class _Process:
    """This process's cache and listener (a forked child starts its own: threads do not survive a fork)."""

    def __init__(self, alias: str, max_age: float):
        self.pid = os.getpid()
        self.cache = OwnerCache(max_age=max_age)
        params = connections[alias].get_connection_params()
        name = params.get("application_name")
        params.update(LISTENER_OPTIONS, application_name=f"{name}/owner-cache" if name else "owner-cache")
        params.setdefault("connect_timeout", 10)
        self.listener = Listener(self.cache, params)
        self.listener.start()


_process: _Process | None = None
_starting = threading.Lock()


def _current(alias: str) -> OwnerCache | None:
    global _process
    max_age = settings.AUTH_CACHE_SECONDS
    if max_age <= 0 or connections[alias].vendor != "postgresql":
        return None
    process = _process
    if process is None or process.pid != os.getpid():
        with _starting:
            if _process is None or _process.pid != os.getpid():
                _process = _Process(alias, max_age)
            process = _process
    return process.cache


def owner_lookup(key: Hashable, fetch: Callable[[], Pair], *, complete: Callable[[Pair], bool]) -> Pair:
    """`fetch()` (the owner and core user read for `key`), answered from this process's cache when it may be (see the
    module's docstring), else read and kept when `complete`."""
    alias = DEFAULT_DB_ALIAS
    cache = _current(alias)
    if cache is None or connections[alias].in_atomic_block:
        return fetch()
    return cache.lookup(key, fetch, complete=complete)


def owner_cache_stop() -> None:
    """Stop this process's listener and forget the cache (tests, before their database is dropped)."""
    global _process
    with _starting:
        process, _process = _process, None
    if process is not None and process.pid == os.getpid():
        process.listener.stop()
