"""The geodesic areas and the GeoJSON of many geometries at once (the intersects hot path) agree with the same
measures taken one geometry at a time by independent routines: pyproj's own `geometry_area_perimeter` and shapely's
`mapping`."""

import random

import pytest
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


def _independent_area_m2(geometry) -> float:
    """pyproj's signed area of each polygon oriented counter-clockwise (its holes clockwise), added up."""
    if isinstance(geometry, Polygon):
        return WGS84.geometry_area_perimeter(orient(geometry, 1.0))[0] if not geometry.is_empty else 0.0
    return sum(_independent_area_m2(part) for part in getattr(geometry, "geoms", []))


def test_the_areas_of_many_geometries_at_once_are_each_one_s_own():
    shapes = _shapes()
    expected = [_independent_area_m2(shape) for shape in shapes]
    assert geodesic_areas_m2([*shapes, None]).tolist() == pytest.approx([*expected, 0.0], rel=1e-9, abs=1e-6)
    assert [geodesic_area_m2(shape) for shape in shapes] == pytest.approx(expected, rel=1e-9, abs=1e-6)
    assert any(len(shape.interiors) for shape in shapes if isinstance(shape, Polygon))  # holes were measured


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
