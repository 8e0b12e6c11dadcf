"""The embedded database file and its write-ahead log hold password hashes, webhook secrets and provider tokens:
readable by their owner only (0600), as the secret key and the demo owner's credentials are. SQLite made them 0644."""

import sqlite3
import stat

import pytest

from platform_site.db.spatialite.base import database_file_restrict

pytestmark = pytest.mark.embedded
SUFFIXES = ("", "-wal", "-shm")


def _modes(database) -> dict[str, int]:
    return {suffix: stat.S_IMODE(database.with_name(database.name + suffix).stat().st_mode) for suffix in SUFFIXES}


def _write_in_wal_mode(database):
    """A connection in write-ahead-log mode that wrote a row, kept open (SQLite removes `-wal`, `-shm` when the last
    connection closes)."""
    connection = sqlite3.connect(database)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("CREATE TABLE IF NOT EXISTS t (x)")
    connection.execute("INSERT INTO t VALUES (1)")
    connection.commit()
    return connection


def test_a_new_database_and_its_wal_files_are_made_0600(tmp_path):
    database = tmp_path / "platform.sqlite3"
    database_file_restrict(database)
    connection = _write_in_wal_mode(database)
    try:
        assert _modes(database) == {"": 0o600, "-wal": 0o600, "-shm": 0o600}
    finally:
        connection.close()


def test_an_existing_database_made_readable_by_all_is_tightened(tmp_path):
    database = tmp_path / "platform.sqlite3"
    connection = _write_in_wal_mode(database)
    try:
        for suffix in SUFFIXES:
            database.with_name(database.name + suffix).chmod(0o644)
        database_file_restrict(database)
        assert _modes(database) == {"": 0o600, "-wal": 0o600, "-shm": 0o600}
    finally:
        connection.close()


def test_in_memory_databases_are_left_to_sqlite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    database_file_restrict(":memory:")
    database_file_restrict("file:memorydb_default?mode=memory&cache=shared")
    assert list(tmp_path.iterdir()) == []
