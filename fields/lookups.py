"""`geometry__may_intersect`: the spatial lookup that finds candidates for the overlap rule.

The exact overlap of each candidate is computed in Python (`fields.geometry.overlaps`), so the database only has to
leave no intersecting row out. PostgreSQL answers PostGIS's `ST_Intersects`, exact and quick (prepared geometries,
the GiST index). SpatiaLite answers `MbrIntersects`, whether the bounding boxes meet: its `ST_Intersects` runs the
GEOS it links without prepared geometries, and two valid boundaries with thousands of holes took 163 s to compare
(shapely: 0.1 ms), the embedded database locked for every owner meanwhile. Rows whose boxes meet but whose shapes do
not overlap are then left out by their ratio of 0, as on PostGIS.
"""

from django.contrib.gis.db.models import GeometryField
from django.contrib.gis.db.models.lookups import GISLookup

# The test of a candidate row, by database vendor: `{}(geometry column, geometry)`.
MAY_INTERSECT = {"postgresql": "ST_Intersects", "sqlite": "MbrIntersects"}


@GeometryField.register_lookup
class MayIntersect(GISLookup):
    lookup_name = "may_intersect"

    def as_sql(self, compiler, connection):
        lhs_sql, lhs_params = self.process_lhs(compiler, connection)
        rhs_sql, rhs_params = self.process_rhs(compiler, connection)
        return f"{MAY_INTERSECT[connection.vendor]}({lhs_sql}, {rhs_sql})", (*lhs_params, *rhs_params)
