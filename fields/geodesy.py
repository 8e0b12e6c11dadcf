"""Areas of shapely polygons on the WGS84 ellipsoid (pyproj's cylindrical equal-area projection of it), and the
coordinate system a GeoJSON `crs` member names, with shapely and pyproj only.

No Django here: the conversion readers measure polygons with it outside any configured project (benchmarks, tools);
`fields.geometry` re-exports these names for the fields app.
"""

from typing import Any

import numpy as np
import shapely
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError
from shapely.geometry import MultiPolygon, Polygon

WGS84 = CRS.from_epsg(4326)
SQUARE_METRES_PER_HECTARE = 10_000.0


def pyproj_arrays(function, *arrays) -> tuple[np.ndarray, ...]:
    """The answers of a pyproj array call (`Transformer.transform`, `Geod.inv`) over 1-D `arrays`, as arrays of
    their length. pyproj takes one-element arrays for scalars (deprecated by NumPy) and answers scalars: two elements
    keep the array path."""
    if len(arrays[0]) == 1:
        return tuple(np.asarray(answer)[:1] for answer in function(*(np.repeat(a, 2) for a in arrays)))
    return tuple(np.asarray(answer) for answer in function(*arrays))


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


def polygon_parts(geometries) -> tuple[np.ndarray, np.ndarray]:
    """The polygons of a sequence of shapely geometries (None: none), looking into collections at any depth, in the
    order `as_multipolygon` lists them, with the index of the geometry each belongs to: array calls for all the
    geometries, none per geometry (`as_multipolygon` builds a MultiPolygon of each)."""
    parts, owners = shapely.get_parts(np.asarray(geometries, dtype=object).reshape(-1), return_index=True)
    kinds = shapely.get_type_id(parts)
    while (nested := kinds >= shapely.GeometryType.MULTIPOINT).any():  # a collection inside a collection
        # Its parts take its place, so the order stays depth first.
        counts = np.where(nested, shapely.get_num_geometries(parts), 1)
        flat = np.empty(counts.sum(), dtype=object)
        kept = (np.cumsum(counts) - counts)[~nested]
        inner = np.ones(len(flat), dtype=bool)
        inner[kept] = False
        flat[kept], flat[inner] = parts[~nested], shapely.get_parts(parts[nested])
        parts, owners = flat, np.repeat(owners, counts)
        kinds = shapely.get_type_id(parts)
    polygonal = kinds == shapely.GeometryType.POLYGON
    return parts[polygonal], owners[polygonal]


def polygon_rings(polygons: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The rings of an array of shapely polygons in the order of their coordinates (each polygon's exterior, then
    its holes), with the index of the polygon each ring belongs to and whether it is the exterior: a few array
    calls for all the polygons, none per ring."""
    rings = shapely.get_exterior_ring(polygons)
    owners = np.arange(len(polygons))
    holes = shapely.get_num_interior_rings(polygons)
    if not holes.any():
        return rings, owners, np.ones(len(rings), dtype=bool)
    holders = np.repeat(owners, holes)
    positions = np.arange(len(holders)) - np.repeat(np.cumsum(holes) - holes, holes)  # each hole's rank in its polygon
    rank = np.concatenate([np.zeros(len(rings), dtype=np.int64), positions + 1])
    owners = np.concatenate([owners, holders])
    order = np.lexsort((rank, owners))
    rings = np.concatenate([rings, shapely.get_interior_ring(polygons[holders], positions)])
    return rings[order], owners[order], rank[order] == 0


# Lambert's cylindrical equal-area projection of the WGS84 ellipsoid: an area there is the area on the ellipsoid;
# x is longitude times a constant, y a smooth function of latitude alone (the authalic latitude's sine, scaled).
EQUAL_AREA = Transformer.from_crs(WGS84, CRS.from_proj4("+proj=cea +ellps=WGS84 +units=m"), always_xy=True)
# Gauss-Legendre nodes and weights on [0, 1]: the mean of y along an edge from y at three points of it (exact for
# a polynomial of degree 5; along at most MAX_EDGE_DEGREES of latitude, y is one to about 1e-10 m).
_LEGENDRE_NODES, _LEGENDRE_WEIGHTS = np.polynomial.legendre.leggauss(3)  # (on [-1, 1])
_NODES, _WEIGHTS = (_LEGENDRE_NODES + 1) / 2, _LEGENDRE_WEIGHTS / 2
# Longer edges are measured in pieces this long, in degrees.
MAX_EDGE_DEGREES = 1.0


def geodesic_areas_m2(geometries) -> np.ndarray:
    """Area on the WGS84 ellipsoid in square metres of each geometry of a sequence (None: 0), whatever the
    orientation of the rings: each polygon's outer ring less its holes; lines and points have none.

    An edge is a straight line in longitude and latitude, as GeoJSON (RFC 7946 3.1.1), the database and shapely
    read it: the area is exact for such edges, so the pieces of a polygon that shapely cuts (an intersection, the
    halves of a split) add up to the polygon. A ring's area is the line integral of y dx around it in the equal-area
    projection (Green's theorem): along a straight edge x grows evenly and latitude too, so the integral is the
    edge's dx times the mean of y along it. (Measured with geodesic edges, as pyproj's `Geod` measures a polygon, a
    0.1 degree triangle's halves came out 0.02 percent larger than the whole: the spec's 50 % threshold failed.)

    The polygons, their rings and the rings' coordinates come out of every geometry at once (shapely's array
    functions), and every edge is measured in one pass of array arithmetic."""
    areas = np.zeros(len(geometries))
    polygons, owners = polygon_parts(geometries)
    rings, ring_polygons, outer = polygon_rings(polygons)
    # A ring of one position repeated has no area, and GEOS cannot segmentize it (a machine file's degenerate cell
    # failed its whole data set)
    measurable = shapely.length(rings) > 0
    rings, ring_polygons, outer = rings[measurable], ring_polygons[measurable], outer[measurable]
    rings = shapely.segmentize(rings, MAX_EDGE_DEGREES)
    coordinates = shapely.get_coordinates(rings)
    ring_of = np.repeat(np.arange(len(rings)), shapely.get_num_coordinates(rings))
    edges = np.flatnonzero(ring_of[:-1] == ring_of[1:])  # each position followed by another of its ring
    if not len(edges):
        return areas
    from_latitude, to_latitude = coordinates[edges, 1], coordinates[edges + 1, 1]
    node_latitudes = (from_latitude[:, None] + np.outer(to_latitude - from_latitude, _NODES)).reshape(-1)
    # (one call for the positions and the nodes: x of a node is not needed, its longitude is left at 0)
    x, y = EQUAL_AREA.transform(
        np.concatenate([coordinates[:, 0], np.zeros(len(node_latitudes))]),
        np.concatenate([coordinates[:, 1], node_latitudes]),
    )
    x, y, node_y = x[: len(coordinates)], y[: len(coordinates)], y[len(coordinates) :]
    # (y less the y of the ring's first position: the same integral, as dx adds up to 0 around a ring, without
    # adding numbers of millions of metres for a field of a few hundred)
    first = np.searchsorted(ring_of, ring_of[edges])
    integrand = (x[edges + 1] - x[edges]) * (node_y.reshape(len(edges), -1) @ _WEIGHTS - y[first])
    ring_areas = np.abs(np.bincount(ring_of[edges], weights=integrand, minlength=len(rings)))
    np.add.at(areas, owners[ring_polygons], np.where(outer, ring_areas, -ring_areas))
    return areas


def geodesic_area_m2(geometry) -> float:
    """Area on the WGS84 ellipsoid in square metres of one geometry (see `geodesic_areas_m2`)."""
    return float(geodesic_areas_m2([geometry])[0])


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
