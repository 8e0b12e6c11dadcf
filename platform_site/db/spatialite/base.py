"""GeoDjango's SpatiaLite backend, sending geometries to the database as WKB instead of WKT.

GeoDjango hands SpatiaLite every geometry (a row written, a spatial lookup's operand) as WKT, read back by
`GeomFromText`. That text is rounded to 16 significant digits (0.30000000000000004 was stored as 0.3, where PostGIS,
sent EWKB, keeps every bit), and SpatiaLite's WKT parser takes time that grows much faster than the text: a boundary
of 200,000 positions (the most we take, `fields.geometry.MAX_POSITIONS`) took 6 s to parse, against 6 ms for the
same geometry as WKB through `GeomFromWKB`. This backend sends WKB; nothing else differs.
"""

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
