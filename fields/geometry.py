"""GeoJSON parsing, validation and geodesic measures, with shapely and pyproj only.

We parse GeoJSON ourselves (not through GDAL) so that PostGIS and SpatiaLite deployments see exactly the
same geometry, and compute areas and overlap ratios in Python on WGS84 (pyproj, `fields.geodesy`), so both databases
give the same numbers. The database only supplies candidates through an indexed `intersects` lookup.
"""

import json
import math
import re
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import shapely
from django.contrib.gis.geos import GEOSGeometry
from shapely.affinity import translate
from shapely.geometry import MultiPolygon, Point, Polygon, box
from shapely.validation import explain_validity

from platform_site.api.errors import DomainError
from platform_site.text import ECHO_MAX, clip

from .geodesy import WGS84, as_multipolygon, geodesic_areas_m2, geojson_crs, polygon_parts, polygon_rings

# Ratios are compared with this tolerance (in percent points) so that an exact 50 % is not lost to rounding.
RATIO_TOLERANCE = 1e-7
# The most a geometry sent to us may hold. Far past any field (a few parts, thousands of positions), and low enough
# that every query over it stays bounded: 40,000 parts took minutes to check and overlay against others, while the
# embedded database waited (every other request of every owner failed meanwhile).
MAX_POLYGONS = 1_000
MAX_POSITIONS = 200_000
# Rings of this many positions or more are checked with numpy (`_check_ring`); fewer are checked faster one by one.
VECTORISED_FROM = 32


class InvalidGeometry(DomainError):
    """400 `invalidGeometry`: the GeoJSON cannot be a field boundary; the detail says why."""

    error_key = "invalidGeometry"

    def __init__(self, reason: str, *, field: str = "geometry"):
        super().__init__(f"Invalid geometry: {reason}", field_errors=[{"field": field, "message": reason}])


def _check_ring(ring: Any, where: str) -> np.ndarray:
    """The ring's (longitude, latitude) points as an (n, 2) array, altitudes dropped (but, as every number of a
    position, finite). A long ring is checked all at once when its positions are all lists of two numbers, or all of
    three (the usual case: a ring of 200,000 positions took 0.4 s position by position, 0.05 s so); any other ring,
    or one that fails a check, position by position, which names the first wrong position."""
    if not isinstance(ring, list) or len(ring) < 4:
        raise InvalidGeometry(f"{where} must be a list of at least 4 positions.")
    if len(ring) < VECTORISED_FROM:
        return np.array(_ring_positions(ring, where), dtype=np.float64)
    sizes = set(map(len, ring)) if set(map(type, ring)) == {list} else None
    # (Positions of one size, two or three numbers: a ring mixing both is checked one by one.)
    if sizes in ({2}, {3}) and set(map(type, chain.from_iterable(ring))) <= {int, float}:  # (a bool is no int)
        try:
            points = np.array(ring, dtype=np.float64)
        except OverflowError:  # an integer no float holds
            pass
        else:
            if (
                np.isfinite(points).all()
                and (np.abs(points[:, 0]) <= 180.0).all()
                and (np.abs(points[:, 1]) <= 90.0).all()
                and (points[0, :2] == points[-1, :2]).all()
            ):
                return points[:, :2]
    return np.array(_ring_positions(ring, where), dtype=np.float64)


def _ring_positions(ring: list, where: str) -> list[tuple[float, float]]:
    """`_check_ring` position by position: the first wrong position raises `InvalidGeometry`, named."""
    points = []
    for index, position in enumerate(ring):
        if (
            not isinstance(position, list)
            or len(position) not in (2, 3)
            or not all(isinstance(c, (int, float)) and not isinstance(c, bool) for c in position)
        ):
            raise InvalidGeometry(
                f"{where}[{index}] must be a position [longitude, latitude] or [longitude, latitude, altitude]."
            )
        try:  # an integer of 400 digits is a JSON number too, and no float holds it; 1e400 is read as infinity
            numbers = [float(c) for c in position]
        except OverflowError:
            numbers = [math.inf]
        if not all(math.isfinite(number) for number in numbers):  # (the altitude too, though it is dropped)
            raise InvalidGeometry(f"{where}[{index}] is not a finite number.")
        lon, lat = numbers[:2]
        if not -180.0 <= lon <= 180.0:
            raise InvalidGeometry(f"{where}[{index}]: longitude {lon} is outside [-180, 180].")
        if not -90.0 <= lat <= 90.0:
            raise InvalidGeometry(f"{where}[{index}]: latitude {lat} is outside [-90, 90].")
        points.append((lon, lat))
    if points[0] != points[-1]:
        raise InvalidGeometry(f"{where} is not closed: its first and last positions differ.")
    return points


def _check_polygon(rings: Any, where: str) -> list[np.ndarray]:
    """The polygon's rings as checked (longitude, latitude) points (`_check_ring`)."""
    if not isinstance(rings, list) or not rings:
        raise InvalidGeometry(f"{where} must be a non-empty list of linear rings.")
    return [_check_ring(ring, f"{where}[{index}]") for index, ring in enumerate(rings)]


def _check_size(polygons: list) -> None:
    """At most MAX_POLYGONS polygons and MAX_POSITIONS positions, counted before any is read."""
    if len(polygons) > MAX_POLYGONS:
        raise InvalidGeometry(f"{len(polygons)} polygons: a geometry may have at most {MAX_POLYGONS}.")
    positions = sum(
        len(ring) for rings in polygons if isinstance(rings, list) for ring in rings if isinstance(ring, list)
    )
    if positions > MAX_POSITIONS:
        raise InvalidGeometry(f"{positions} positions: a geometry may have at most {MAX_POSITIONS}.")


def _check_crs(member: Any) -> None:
    """Positions are WGS84 longitude/latitude (RFC 7946). A `crs` member is accepted only when it names WGS84
    (CRS84, EPSG:4326): other numbers are no degrees."""
    if member is None:
        return
    try:
        wgs84 = geojson_crs(member).equals(WGS84, ignore_axis_order=True)
    except ValueError:  # names no coordinate system
        wgs84 = False
    if not wgs84:
        raise InvalidGeometry(
            "positions are WGS84 longitude/latitude (RFC 7946); a crs member may only name WGS84 (CRS84, EPSG:4326)."
        )


def parse_multipolygon(data: Any) -> MultiPolygon:
    """A validated shapely MultiPolygon from a GeoJSON `MultiPolygon` (or `Polygon`, promoted).

    Raises `InvalidGeometry` (400 `invalidGeometry`) with the reason: wrong type, malformed coordinates,
    unclosed rings, longitude/latitude out of range, a polygon wider than 180 degrees of longitude (edges are flat
    lines in longitude and latitude: one across the antimeridian goes round the other way), or an invalid shape
    (self-intersection...). Positions may carry an altitude; it is dropped."""
    if not isinstance(data, dict):
        raise InvalidGeometry("must be a GeoJSON object with 'type' and 'coordinates'.")
    _check_crs(data.get("crs"))
    kind, coordinates = data.get("type"), data.get("coordinates")
    # Shapes are built from the checked 2D points: a ring mixing positions with and without an altitude was refused
    # with numpy's "inhomogeneous shape" when given to shapely as sent.
    if kind == "Polygon":
        polygons, where = [coordinates], "coordinates"
    elif kind == "MultiPolygon":
        if not isinstance(coordinates, list) or not coordinates:
            raise InvalidGeometry("coordinates must be a non-empty list of polygons.")
        polygons, where = coordinates, "coordinates[{}]"
    elif "type" not in data:
        raise InvalidGeometry("type is required: 'MultiPolygon' or 'Polygon'.")
    else:
        # (JSON's writing of what was sent, cut: Python's repr said None, ['MultiPolygon'] and echoed any length)
        sent = clip(json.dumps(kind, ensure_ascii=False), ECHO_MAX)
        raise InvalidGeometry(f"type must be 'MultiPolygon' or 'Polygon', not {sent}.")
    _check_size(polygons)
    checked = [_check_polygon(polygon, where.format(index)) for index, polygon in enumerate(polygons)]
    try:
        geometry = MultiPolygon([Polygon(rings[0], rings[1:]) for rings in checked])
    except (ValueError, TypeError, shapely.errors.ShapelyError) as exc:
        raise InvalidGeometry(str(exc)) from None
    if geometry.is_empty:
        raise InvalidGeometry("the geometry is empty.")
    for index, polygon in enumerate(geometry.geoms):
        west, _, east, _ = polygon.bounds
        if east - west > 180.0:
            raise InvalidGeometry(
                f"polygon {index} spans {east - west:g} degrees of longitude (at most 180); a field across the "
                "antimeridian is sent as a MultiPolygon split at longitude 180."
            )
    if not geometry.is_valid:
        raise InvalidGeometry(_invalidity(geometry))
    return geometry


# GEOS's reason a shape is invalid, with the position it found: "Ring Self-intersection[1 1]".
_GEOS_REASON = re.compile(r"^(?P<reason>[^\[]+)\[(?P<x>\S+) (?P<y>\S+)\]$")


def _invalidity(geometry: MultiPolygon) -> str:
    """Why an invalid MultiPolygon is, in words with the polygon and the position: GEOS's "Self-intersection[0.5
    0.5]" named neither the polygon nor, for parts that overlap, that they do."""

    def reason(shape) -> str:
        found = explain_validity(shape)
        match = _GEOS_REASON.match(found)
        if not match:
            return found
        said = match["reason"].strip().lower()
        if said == "too few points in geometry component":
            # (GEOS counts distinct positions: four equal positions are "too few" though four were sent)
            said = "a ring of fewer than three different positions (a ring needs three, then the first again)"
        return f"{said} at [{match['x']}, {match['y']}]"

    for index, polygon in enumerate(geometry.geoms):
        if not polygon.is_valid:
            return f"polygon {index}: {reason(polygon)}."
    return (
        f"its polygons overlap or share an edge ({reason(geometry)}); the polygons of a MultiPolygon may touch at "
        "points only."
    )


def to_geojson_each(geometries) -> list[dict]:
    """GeoJSON MultiPolygon dicts (lists, not tuples) of a sequence of polygonal shapely geometries (the polygonal
    part of each), positions as [longitude, latitude], rings wound as RFC 7946 asks (exteriors counterclockwise,
    holes clockwise; a union or intersection comes out of GEOS the other way round). The coordinates of all come
    out of shapely in one call."""
    polygons, owners = polygon_parts(geometries)
    polygons = shapely.orient_polygons(polygons, exterior_cw=False)
    rings, ring_polygons, _ = polygon_rings(polygons)
    coordinates = shapely.get_coordinates(rings).tolist()
    found: list[dict] = [{"type": "MultiPolygon", "coordinates": []} for _ in geometries]
    owners, start, polygon_rings_of = owners.tolist(), 0, None
    for polygon, size in zip(ring_polygons.tolist(), shapely.get_num_coordinates(rings).tolist(), strict=True):
        if size == 0:  # the ring of an empty polygon
            continue
        if polygon != polygon_rings_of:  # a new polygon begins with its exterior
            found[owners[polygon]]["coordinates"].append([])
            polygon_rings_of = polygon
        found[owners[polygon]]["coordinates"][-1].append(coordinates[start : start + size])
        start += size
    return found


def to_geojson(geometry: MultiPolygon) -> dict:
    """GeoJSON MultiPolygon dict with lists (not tuples): see `to_geojson_each`."""
    return to_geojson_each([geometry])[0]


def centroid_lonlat(geometry: MultiPolygon) -> Point:
    """The planar centroid of a lon/lat geometry, longitude in [-180, 180]. A field split at the antimeridian (parts
    at both ends of the longitudes, as GeoJSON asks) is taken as one piece across it: its plain centroid lay near
    longitude 0, on the other side of the Earth."""
    parts = list(as_multipolygon(geometry).geoms)
    west, _, east, _ = geometry.bounds
    if east - west <= 180.0:
        return geometry.centroid
    # The parts wholly west of the prime meridian, moved one turn east: kept when the whole is then narrower.
    moved = MultiPolygon([translate(part, xoff=360.0) if part.bounds[2] <= 0.0 else part for part in parts])
    moved_west, _, moved_east, _ = moved.bounds
    if moved_east - moved_west >= east - west:
        return geometry.centroid
    centroid = moved.centroid
    return Point(centroid.x - 360.0 if centroid.x > 180.0 else centroid.x, centroid.y)


def to_geos(geometry: MultiPolygon) -> GEOSGeometry:
    """A GEOS MultiPolygon in SRID 4326 for the database (built from WKB: no GDAL involved)."""
    return GEOSGeometry(memoryview(shapely.to_wkb(as_multipolygon(geometry))), srid=4326)


def from_geos(geometry: GEOSGeometry) -> MultiPolygon:
    return as_multipolygon(shapely.from_wkb(bytes(geometry.wkb)))


def candidate_window(geometry: MultiPolygon):
    """What the database tests its rows against to find the candidates of the overlap rule: the bounding box of each
    polygon of `geometry` (their union, a valid shape), never the geometry itself. The exact overlap is computed in
    Python (`overlaps`), so a row whose outline only meets the boxes is left out by its ratio of 0. The databases'
    `ST_Intersects` run the GEOS they link (3.11 here) without a prepared geometry for a single row: two valid
    boundaries of 50,000 holes each took 163-171 s to compare on either database (shapely's GEOS 3.13: 0.1 ms), the
    embedded database refusing every owner's writes meanwhile. Against a box GEOS takes its rectangle shortcut; one
    box per polygon keeps far-apart polygons (a field split at the antimeridian) from taking in every row between."""
    boxes = [box(*polygon.bounds) for polygon in geometry.geoms]
    return boxes[0] if len(boxes) == 1 else shapely.union_all(boxes)


@dataclass(frozen=True)
class Overlap:
    """Intersection area and the two ratios of the spec's threshold rule, in percent."""

    area_m2: float
    of_field: float
    of_geometry: float

    @property
    def best(self) -> float:
        return max(self.of_field, self.of_geometry)

    def satisfies(self, threshold: float) -> bool:
        """The spec's rule: the threshold is at most either ratio (zero-area contact never counts)."""
        return self.area_m2 > 0 and self.best + RATIO_TOLERANCE >= threshold


def overlaps(field_geometries, field_areas_m2, geometry) -> list[Overlap]:
    """Geodesic overlap of each field boundary with a geometry, as percentages of each area: one vectorised
    GEOS intersection over the whole array, and the geodesic areas of all the intersections and of `geometry` in
    one pass."""
    intersections = shapely.intersection(np.asarray(field_geometries, dtype=object), geometry)
    *areas, geometry_area_m2 = geodesic_areas_m2([*intersections, geometry]).tolist()
    found = []
    for area, field_area_m2 in zip(areas, field_areas_m2, strict=True):
        found.append(
            Overlap(
                area_m2=area,
                of_field=100.0 * area / field_area_m2 if field_area_m2 > 0 else 0.0,
                of_geometry=100.0 * area / geometry_area_m2 if geometry_area_m2 > 0 else 0.0,
            )
        )
    return found
