"""Geodesic measures of shapely polygons on the WGS84 ellipsoid (pyproj `Geod`), and the coordinate system a GeoJSON
`crs` member names, with shapely and pyproj only.

No Django here: the conversion readers measure polygons with it outside any configured project (benchmarks, tools);
`fields.geometry` re-exports these names for the fields app.
"""

from typing import Any

import shapely
from pyproj import CRS, Geod
from pyproj.exceptions import CRSError
from shapely.geometry import MultiPolygon, Polygon

GEOD = Geod(ellps="WGS84")
WGS84 = CRS.from_epsg(4326)
SQUARE_METRES_PER_HECTARE = 10_000.0


def as_multipolygon(geometry) -> MultiPolygon:
    """The polygonal part of any shapely geometry as a MultiPolygon (lines and points of a result dropped)."""
    if isinstance(geometry, MultiPolygon):
        return geometry
    if isinstance(geometry, Polygon):
        return MultiPolygon([geometry]) if not geometry.is_empty else MultiPolygon()
    polygons: list[Polygon] = []
    for part in getattr(geometry, "geoms", []):
        polygons.extend(as_multipolygon(part).geoms)
    return MultiPolygon(polygons)


def _ring_area_m2(ring) -> float:
    coordinates = shapely.get_coordinates(ring)
    area, _ = GEOD.polygon_area_perimeter(coordinates[:, 0], coordinates[:, 1])
    return abs(area)


def geodesic_area_m2(geometry) -> float:
    """Area on the WGS84 ellipsoid in square metres, whatever the orientation of the rings: each polygon's
    outer ring less its holes."""
    return sum(
        _ring_area_m2(polygon.exterior) - sum(_ring_area_m2(hole) for hole in polygon.interiors)
        for polygon in as_multipolygon(geometry).geoms
    )


def geodesic_area_ha(geometry) -> float:
    return geodesic_area_m2(geometry) / SQUARE_METRES_PER_HECTARE


def geojson_crs(member: Any) -> CRS | None:
    """The coordinate system a GeoJSON `crs` member names: GeoJSON 2008's `{"type": "name", "properties": {"name":
    "EPSG:32632"}}` (or a URN), or the older `{"type": "EPSG", "properties": {"code": 32632}}`; None without one
    (RFC 7946 has none: WGS84 longitude/latitude). ValueError when the member names no system pyproj knows."""
    if member is None:
        return None
    properties = member.get("properties") if isinstance(member, dict) else None
    kind = member.get("type") if isinstance(member, dict) else None
    name = None
    if isinstance(properties, dict) and kind == "name" and isinstance(properties.get("name"), str):
        name = properties["name"]
    elif isinstance(properties, dict) and kind == "EPSG" and isinstance(properties.get("code"), int | str):
        name = f"EPSG:{properties['code']}"
    if name is None:
        raise ValueError("its crs is not named")
    try:
        return CRS.from_user_input(name)
    except CRSError:
        raise ValueError(f"its crs {name[:100]!r} is not a coordinate system") from None
