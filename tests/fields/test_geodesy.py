"""The areas and the GeoJSON of many geometries at once (the intersects hot path) agree with independent measures
taken one geometry at a time: the exact area of longitude/latitude boxes on the ellipsoid, pyproj's geodesic area of
outlines cut into edges short enough to be straight, and shapely's `mapping`; the pieces shapely cuts a polygon into
add up to it."""

import math
import random

import pytest
import shapely
from pyproj import Geod
from shapely.geometry import GeometryCollection, LineString, MultiPolygon, Point, Polygon, box, mapping
from shapely.geometry.polygon import orient

from fields.geodesy import as_multipolygon, geodesic_area_m2, geodesic_areas_m2
from fields.geometry import to_geojson, to_geojson_each

pytestmark = pytest.mark.embedded

WGS84 = Geod(ellps="WGS84")


def _shapes() -> list:
    rng = random.Random(11)
    shapes = []
    for _ in range(60):
        x, y = rng.uniform(-170, 170), rng.uniform(-80, 79)
        holes = [box(x + 0.1 + 0.2 * k, y + 0.1, x + 0.15 + 0.2 * k, y + 0.15).exterior.coords for k in range(3)]
        polygon = Polygon(box(x, y, x + 1, y + 1).exterior.coords[::-1], holes[: rng.randint(0, 3)])
        shapes += [
            polygon,
            MultiPolygon([box(x + 2, y, x + 2.5, y + 0.5), polygon]),
            GeometryCollection([LineString([(x, y), (x + 1, y + 1)]), polygon, Point(x, y)]),
            GeometryCollection([GeometryCollection([polygon]), MultiPolygon([box(x, y - 2, x + 1, y - 1)])]),
            GeometryCollection([GeometryCollection([polygon]), box(x, y - 2, x + 1, y - 1)]),
        ]
    return shapes + [Polygon(), MultiPolygon(), GeometryCollection(), Point(1, 2), LineString([(0, 0), (1, 1)])]


def _box_area_m2(west: float, south: float, east: float, north: float) -> float:
    """The exact area of a longitude/latitude box on the WGS84 ellipsoid, its edges meridians and parallels (the
    straight lines GeoJSON means): the zone between two parallels, as the share of a turn the box spans."""
    a, f = WGS84.a, WGS84.f
    e = math.sqrt(f * (2 - f))
    b = a * (1 - f)

    def zone(latitude: float) -> float:  # twice the area from the equator to `latitude` per radian, over b**2
        s = math.sin(math.radians(latitude))
        return s / (1 - (e * s) ** 2) + math.log((1 + e * s) / (1 - e * s)) / (2 * e)

    return math.radians(east - west) / 2 * b**2 * (zone(north) - zone(south))


def _independent_area_m2(geometry) -> float:
    """The exact area of each box-shaped polygon (a box less its box-shaped holes), added up."""
    if isinstance(geometry, Polygon):
        if geometry.is_empty:
            return 0.0
        rings = [geometry.exterior, *geometry.interiors]
        assert all(Polygon(ring).equals(box(*Polygon(ring).bounds)) for ring in rings)  # boxes only
        exterior, *holes = (_box_area_m2(*Polygon(ring).bounds) for ring in rings)
        return exterior - sum(holes)
    return sum(_independent_area_m2(part) for part in getattr(geometry, "geoms", []))


def test_the_areas_of_many_geometries_at_once_are_each_one_s_own():
    shapes = _shapes()
    expected = [_independent_area_m2(shape) for shape in shapes]
    assert geodesic_areas_m2([*shapes, None]).tolist() == pytest.approx([*expected, 0.0], rel=1e-9, abs=1e-6)
    assert [geodesic_area_m2(shape) for shape in shapes] == geodesic_areas_m2(shapes).tolist()
    assert any(len(shape.interiors) for shape in shapes if isinstance(shape, Polygon))  # holes were measured


@pytest.mark.parametrize("width", [0.005, 1.0, 45.0, 90.0, 135.0, 179.0, 180.0])
def test_the_area_of_a_box_of_any_width_is_the_area_between_its_meridians_and_parallels(width):
    """Edges measured as geodesics bulge towards the pole: a box 90 degrees wide came out 23 % too large, one 180
    degrees wide had no area at all."""
    outline = box(-90.0, 10.0, -90.0 + width, 10.1)
    assert geodesic_area_m2(outline) == pytest.approx(_box_area_m2(*outline.bounds), rel=1e-9)


@pytest.mark.parametrize(
    "outline",
    [
        Polygon([(30.0, 45.0), (30.099, 45.0), (30.0495, 45.0495)]),  # a field-sized triangle
        Polygon([(-93.6, 42.0), (-93.55, 42.01), (-93.52, 42.05), (-93.58, 42.07), (-93.61, 42.03)]),
        Polygon([(10.0, 60.0), (12.5, 61.0), (11.0, 63.5)]),  # edges longer than a degree, far north
        Polygon(
            [(-60.0, -30.0), (-59.9, -30.05), (-59.95, -29.9)], [[(-59.96, -29.99), (-59.94, -29.99), (-59.95, -29.97)]]
        ),
    ],
)
def test_the_area_of_any_outline_is_its_geodesic_area_with_edges_cut_short_enough_to_be_straight(outline):
    """pyproj measures a polygon's edges as geodesics; cut into pieces of 0.0002 degrees, each is as straight in
    longitude and latitude as makes no difference (its bulge is under a millimetre)."""
    pieces = shapely.segmentize(outline, 0.0002)
    expected = abs(WGS84.geometry_area_perimeter(pieces.exterior)[0]) - sum(
        abs(WGS84.geometry_area_perimeter(hole)[0]) for hole in pieces.interiors
    )
    assert geodesic_area_m2(outline) == pytest.approx(expected, rel=1e-8)


def test_the_pieces_shapely_cuts_a_polygon_into_add_up_to_it():
    """An intersection's area is a share of both areas: the pieces a polygon is cut into by a grid add up to it (with
    geodesic edges, a cut edge's pieces bulge less than the whole edge, and the shares did not add up to 100 %)."""
    rng = random.Random(5)
    for _ in range(20):
        x, y, size = rng.uniform(-170, 170), rng.uniform(-80, 79), rng.choice([0.005, 0.05, 0.5])
        outline = Polygon([(x, y), (x + size, y + rng.uniform(-1, 1) * size), (x + size * rng.random(), y + size)])
        cuts = [box(x + i * size / 4, y - size, x + (i + 1) * size / 4, y + 2 * size) for i in range(4)]
        pieces = geodesic_areas_m2([outline.intersection(cut) for cut in cuts])
        assert pieces.sum() == pytest.approx(geodesic_area_m2(outline), rel=1e-10)


def test_the_geojson_of_many_geometries_at_once_is_each_one_s_own():
    """Each the polygonal part of its geometry (collections at any depth, in order), as shapely maps it once each
    polygon is wound as RFC 7946 asks (exterior counterclockwise, holes clockwise; the shapes have both wrong)."""
    shapes = _shapes()
    expected = []
    for shape in shapes:
        polygonal = MultiPolygon([orient(polygon, 1.0) for polygon in as_multipolygon(shape).geoms])
        coordinates = [] if polygonal.is_empty else mapping(polygonal)["coordinates"]
        expected.append(
            {
                "type": "MultiPolygon",
                "coordinates": [[[list(position) for position in ring] for ring in polygon] for polygon in coordinates],
            }
        )
    assert to_geojson_each(shapes) == expected
    assert [to_geojson(shape) for shape in shapes] == expected
    assert to_geojson_each([]) == []
    assert any(len(polygon["coordinates"]) > 1 for polygon in expected)  # several polygons kept their order
