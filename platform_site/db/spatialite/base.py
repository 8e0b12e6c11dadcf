"""GeoDjango's SpatiaLite backend, sending geometries to the database as WKB instead of WKT.

GeoDjango hands SpatiaLite every geometry (a row written, a spatial lookup's operand) as WKT, read back by
`GeomFromText`. That text is rounded to 16 significant digits (0.30000000000000004 was stored as 0.3, where PostGIS,
sent EWKB, keeps every bit), and SpatiaLite's WKT parser takes time that grows much faster than the text: a boundary
of 200,000 positions (the most we take, `fields.geometry.MAX_POSITIONS`) took 6 s to parse, against 6 ms for the
same geometry as WKB through `GeomFromWKB`. This backend sends WKB, and keeps the database file readable by its
owner only (`database_file_restrict`).
"""

import os
import threading
from pathlib import Path

from django.contrib.gis.db.backends.spatialite.base import DatabaseWrapper as SpatiaLiteDatabaseWrapper
from django.contrib.gis.db.backends.spatialite.operations import SpatiaLiteOperations
from django.db.backends.sqlite3.base import Database


class WKBAdapter:
    """A geometry as the SQLite driver sends it: its WKB (a BLOB), with its SRID in the SQL (`GeomFromWKB(%s, srid)`,
    as `get_geom_placeholder` writes it)."""

    def __init__(self, geom):
        self.wkb = bytes(geom.wkb)
        self.srid = geom.srid

    def __conform__(self, protocol):
        if protocol is Database.PrepareProtocol:
            return self.wkb

    def __eq__(self, other):
        return isinstance(other, WKBAdapter) and self.wkb == other.wkb and self.srid == other.srid

    def __hash__(self):
        return hash((self.wkb, self.srid))

    def __str__(self):
        return self.wkb.hex()


class Operations(SpatiaLiteOperations):
    Adapter = WKBAdapter
    from_text = "GeomFromWKB"


class DatabaseWrapper(SpatiaLiteDatabaseWrapper):
    ops_class = Operations

    def get_new_connection(self, conn_params):
        database_file_restrict(conn_params["database"])
        return super().get_new_connection(conn_params)


_restricted: set[str] = set()
_restricting = threading.Lock()


def database_file_restrict(name) -> None:
    """Make the database file at `name` (and its `-wal`, `-shm` and `-journal` files) 0600, once per process: it
    holds password hashes, webhook secrets and provider tokens, and SQLite created it 0644 (the umask's), readable by
    every user of the host, beside a secret key and demo credentials kept 0600. Done where any process connects
    (`migrate`, which creates it under `make run`, the server, a management command), not by a umask of the server
    alone, which would miss the file `migrate` made before it. A missing file is created 0600 (an empty file is an
    empty database); SQLite then creates the `-wal`, `-shm` and `-journal` files with the mode of the database
    file, so they are 0600 too; an existing file is tightened (an installation made before this). In-memory and
    URI databases are left to SQLite; a file this user may not change is left as it is (SQLite reports what it
    cannot open)."""
    name = str(name)
    if name == ":memory:" or name.startswith("file:") or name in _restricted:
        return
    with _restricting:
        if name in _restricted:
            return
        path = Path(name)
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        except OSError:
            return  # (a missing folder, a read-only one: SQLite's own error says it)
        for file in (path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))):
            try:
                if file.stat().st_mode & 0o077:
                    file.chmod(0o600)
            except OSError:
                pass  # missing, or another user's
        _restricted.add(name)
