"""Fields API: create / get / list / patch / delete, geometry validation and areas."""

import json
import math
import uuid

import numpy as np
import pytest

from fields.geometry import InvalidGeometry, parse_multipolygon
from fields.models import Boundary, Field, FieldFile
from fields.services import field_create
from tests.factories import CoreUserFactory
from tests.fields.helpers import (
    BASE,
    create_field,
    equal_area_hectares,
    field_url,
    fields_url,
    provider_field,
    rect,
    square,
)
from tests.tenancy import assert_cross_tenant_404, assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def test_create_generates_a_uuid_and_answers_the_spec_keys(api_client, core_user):
    geometry = square(10, 50)
    body = create_field(api_client, core_user, geometry, name="North")
    assert uuid.UUID(body["id"])
    assert body["coreUserId"] == str(core_user.id)
    assert body["name"] == "North"
    assert body["type"] == "ORIGINAL"
    assert body["geometry"] == geometry
    assert body["area"]["unit"] == "ha"
    assert len(body["boundaries"]) == 1
    assert body["files"] == [] and body["farmId"] is None and body["legacy"] is False
    assert body["createdTime"].endswith("Z") and body["updatedTime"].endswith("Z")
    # Keys that do not apply are absent.
    assert not {"mergedFieldId", "sources", "providerName", "providerFieldId"} & set(body)


@pytest.mark.parametrize(
    "geometry",
    [square(10, 50), square(-93.6, 42.0, 0.005), rect(179.99, -45.0, 180.0, -44.99), square(0, 0, 0.02)],
)
def test_area_agrees_with_an_independent_equal_area_projection(api_client, core_user, geometry):
    body = create_field(api_client, core_user, geometry)
    assert body["area"]["value"] == pytest.approx(equal_area_hectares(geometry), rel=1e-4)


def test_a_polygon_exactly_180_degrees_wide_is_taken(api_client, core_user):
    """ "At most 180" degrees of longitude: exactly 180 is within."""
    body = create_field(api_client, core_user, rect(0, 0, 180, 1))
    assert body["geometry"] == rect(0, 0, 180, 1) and body["area"]["value"] > 0


def test_area_of_a_known_square_at_the_equator(api_client, core_user):
    # 0.01 degree x 0.01 degree at the equator: 1113.19 m x 1105.74 m on WGS84.
    body = create_field(api_client, core_user, square(0, 0, 0.01))
    assert body["area"]["value"] == pytest.approx(123.09, rel=1e-3)


def test_clockwise_rings_and_holes_give_positive_areas(api_client, core_user):
    outer = [[10, 50], [10, 50.02], [10.02, 50.02], [10.02, 50], [10, 50]]  # clockwise
    hole = [[10.005, 50.005], [10.015, 50.005], [10.015, 50.015], [10.005, 50.015], [10.005, 50.005]]
    geometry = {"type": "Polygon", "coordinates": [outer, hole]}
    body = create_field(api_client, core_user, geometry)
    assert body["area"]["value"] == pytest.approx(equal_area_hectares(geometry), rel=1e-4)


def test_a_polygon_is_promoted_to_a_multipolygon(api_client, core_user):
    polygon = {"type": "Polygon", "coordinates": square(5, 45)["coordinates"][0]}
    body = create_field(api_client, core_user, polygon)
    assert body["geometry"] == square(5, 45)


def test_client_id_is_kept_and_cannot_be_reused(api_client, core_user, other_client, other_owner):
    body = create_field(api_client, core_user, id="my-field-1")
    assert body["id"] == "my-field-1"
    assert api_client.get(field_url(core_user, "my-field-1")).json()["id"] == "my-field-1"
    assert_problem(
        api_client.post(fields_url(core_user), {"id": "my-field-1", "geometry": square(1, 1)}, format="json"),
        409,
        "fieldAlreadyExists",
    )
    assert Field.objects.count() == 1


@pytest.mark.parametrize(
    "bad_id", ["", "a/b", "x" * 256, "intersects", 12, ".", "..", " north-40 ", "\tnorth-40", "north-40\n", " "]
)
def test_bad_client_ids_are_400(api_client, core_user, bad_id):
    response = api_client.post(fields_url(core_user), {"id": bad_id, "geometry": square(1, 1)}, format="json")
    assert_problem(response, 400)
    assert Field.objects.count() == 0


BOWTIE = [[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]


@pytest.mark.parametrize(
    ("geometry", "reason"),
    [
        ("POLYGON((0 0,1 0,1 1,0 0))", "GeoJSON object"),
        ({"type": "Point", "coordinates": [0, 0]}, "type must be 'MultiPolygon' or 'Polygon', not \"Point\"."),
        ({"type": None, "coordinates": []}, "type must be 'MultiPolygon' or 'Polygon', not null."),
        ({"type": ["MultiPolygon"]}, "type must be 'MultiPolygon' or 'Polygon', not [\"MultiPolygon\"]."),
        ({"coordinates": []}, "type is required: 'MultiPolygon' or 'Polygon'."),
        ({"type": "MultiPolygon"}, "non-empty list"),
        ({"type": "MultiPolygon", "coordinates": []}, "non-empty list"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1]]]}, "not closed"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [0, 0]]]}, "at least 4"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [181, 0], [1, 1], [0, 0]]]}, "longitude 181.0 is outside"),
        ({"type": "Polygon", "coordinates": [[[185, 0], [185.5, 0], [185.5, 1], [185, 0]]]}, "longitude 185.0 is out"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 91], [0, 0]]]}, "latitude 91.0 is outside"),
        ({"type": "Polygon", "coordinates": [[[0, 0], ["1", 0], [1, 1], [0, 0]]]}, "position"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [True, 0], [1, 1], [0, 0]]]}, "position"),
        ({"type": "Polygon", "coordinates": [BOWTIE]}, "Self-intersection"),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [2, 0], [0, 0]]]}, "Self-intersection"),
        # GEOS's reason, with the polygon it is in and the position in GeoJSON's order
        ({"type": "Polygon", "coordinates": [BOWTIE]}, "polygon 0: self-intersection at [0.5, 0.5]."),
        # Four positions, as a ring needs, but one place: GEOS's "too few points" read as a count of what was sent
        (
            {"type": "Polygon", "coordinates": [[[0, 0], [0, 0], [0, 0], [0, 0]]]},
            "polygon 0: a ring of fewer than three different positions (a ring needs three, then the first again) at "
            "[0, 0].",
        ),
        (
            {"type": "MultiPolygon", "coordinates": [[[[5, 5], [6, 5], [6, 6], [5, 5]]], [BOWTIE]]},
            "polygon 1: self-intersection at [0.5, 0.5].",
        ),
        (
            {
                "type": "Polygon",
                "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]], [[2, 2], [3, 2], [3, 3], [2, 2]]],
            },
            "polygon 0: hole lies outside shell at [2, 2].",
        ),
        (
            {
                "type": "MultiPolygon",
                "coordinates": [[[[0, 0], [1, 0], [1, 1], [0, 1], [0, 0]]], [[[1, 0], [2, 0], [2, 1], [1, 1], [1, 0]]]],
            },
            "its polygons overlap or share an edge",
        ),
        # Across the antimeridian as one polygon: the database would read it as 358 degrees wide.
        ({"type": "Polygon", "coordinates": [[[179, 0], [-179, 0], [-179, 1], [179, 1], [179, 0]]]}, "antimeridian"),
        ({"type": "Polygon", "coordinates": [[[-180, -90], [180, -90], [180, 90], [-180, 90], [-180, -90]]]}, "360"),
        ({"type": "Polygon", "coordinates": [[[0, 0, 5], [1, 0, "x"], [1, 1, 5], [0, 0, 5]]]}, "position"),
        ({"type": "Polygon", "coordinates": [[[0, 0, 5, 1], [1, 0, 5, 1], [1, 1, 5, 1], [0, 0, 5, 1]]]}, "position"),
        # A coordinate system other than WGS84 longitude/latitude (GeoJSON of 2008): its numbers are not degrees.
        (
            {
                "type": "Polygon",
                "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]],
                "crs": {"type": "name", "properties": {"name": "EPSG:3857"}},
            },
            "crs",
        ),
        ({"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]], "crs": "EPSG:4326"}, "crs"),
    ],
)
def test_invalid_geometry_is_400_with_the_reason(api_client, core_user, geometry, reason):
    response = api_client.post(fields_url(core_user), {"geometry": geometry}, format="json")
    body = assert_problem(response, 400, "invalidGeometry")
    assert reason.lower() in body["detail"].lower(), body["detail"]
    assert body["fieldErrors"][0]["field"] == "geometry"
    assert Field.objects.count() == 0 and Boundary.objects.count() == 0


def test_a_boundary_is_stored_to_the_last_digit(api_client, core_user):
    """Positions come back exactly as sent from either database: the embedded one was sent WKT, which rounded them to
    16 digits (0.30000000000000004 came back 0.3)."""
    west, south = 0.1 + 0.2, 50.123456789012344
    ring = [[west, south], [west + 0.01, south], [west + 0.01, south + 0.01], [west, south + 0.01], [west, south]]
    created = create_field(api_client, core_user, {"type": "Polygon", "coordinates": [ring]})
    stored = api_client.get(f"{fields_url(core_user)}/{created['id']}").json()["geometry"]["coordinates"][0][0]
    assert stored == ring
    assert stored[0] == [0.30000000000000004, 50.123456789012344]


def _long_ring(size: int = 100) -> list:
    """A closed ring of `size` positions (a circle), long enough to be checked all at once."""
    ring = [[10 + 0.01 * math.cos(a), 50 + 0.01 * math.sin(a)] for a in np.linspace(0, 2 * math.pi, size)[:-1]]
    return [*ring, list(ring[0])]


@pytest.mark.parametrize(
    ("bad", "reason"),
    [
        ("10", "coordinates[0][57] must be a position"),
        ([True, 50], "coordinates[0][57] must be a position"),
        ([10, None], "coordinates[0][57] must be a position"),
        ([10, "50"], "coordinates[0][57] must be a position"),
        ([10, 50, 1, 2], "coordinates[0][57] must be a position"),
        ([10], "coordinates[0][57] must be a position"),
        ([10, [50]], "coordinates[0][57] must be a position"),
        ([10, 50, {"z": 1}], "coordinates[0][57] must be a position"),
        ([181, 50], "coordinates[0][57]: longitude 181.0 is outside"),
        ([-180.5, 50], "coordinates[0][57]: longitude -180.5 is outside"),
        ([10, -91], "coordinates[0][57]: latitude -91.0 is outside"),
        ([10, 10**400], "coordinates[0][57] is not a finite number"),
        # An altitude is dropped, but it is a number of the position: a long ring took it when the others had none
        ([10, 50, 10**400], "coordinates[0][57] is not a finite number"),
    ],
)
@pytest.mark.parametrize("later", [None, [200, 0]])
def test_a_long_ring_names_its_first_wrong_position(api_client, core_user, bad, reason, later):
    """Long rings are checked all at once (fields.geometry.VECTORISED_FROM); a wrong position is still found and
    named, as in a short ring."""
    ring = _long_ring()
    ring[57] = bad
    if later:
        ring[80] = later  # a later wrong position is not the one named
    response = api_client.post(
        fields_url(core_user), {"geometry": {"type": "Polygon", "coordinates": [ring]}}, format="json"
    )
    body = assert_problem(response, 400, "invalidGeometry")
    assert reason in body["detail"], body["detail"]
    assert Field.objects.count() == 0


@pytest.mark.parametrize("size", [5, 100])
@pytest.mark.parametrize("altitudes", ["all", "one"])
def test_an_altitude_past_any_double_is_400_in_a_short_or_a_long_ring(api_client, core_user, size, altitudes):
    """`1e400` is a JSON number that Python reads as infinity: as an altitude it was taken (a 400-digit integer there
    was refused), in short and long rings alike."""
    ring = _long_ring(size) if size > 5 else [[10, 50], [10.01, 50], [10.01, 50.01], [10, 50.01], [10, 50]]
    ring = [[*position, 1.0] for position in ring] if altitudes == "all" else ring
    text = json.dumps({"geometry": {"type": "Polygon", "coordinates": [ring]}})
    position = json.dumps(ring[2])
    text = text.replace(position, json.dumps(ring[2][:2])[:-1] + ", 1e400]", 1)
    response = api_client.post(fields_url(core_user), text, content_type="application/json")
    body = assert_problem(response, 400, "invalidGeometry")
    assert "coordinates[0][2] is not a finite number" in body["detail"], body["detail"]


def test_a_long_ring_that_is_not_closed_is_400():
    ring = _long_ring()
    ring[-1] = [ring[-1][0], ring[-1][1] + 1e-9]
    with pytest.raises(InvalidGeometry, match=r"coordinates\[0\] is not closed"):
        parse_multipolygon({"type": "Polygon", "coordinates": [ring]})


def test_a_long_ring_with_integers_and_altitudes_on_some_positions_is_read_as_sent(api_client, core_user):
    plain = _long_ring()
    mixed = [[*position, 120.5] if index % 3 else position for index, position in enumerate(plain)]
    mixed[10] = [10, 50]  # an integer longitude and latitude (the circle passes near no such point: moved here)
    plain[10] = [10.0, 50.0]
    both = [parse_multipolygon({"type": "Polygon", "coordinates": [ring]}) for ring in (plain, mixed)]
    assert both[0].equals_exact(both[1], tolerance=0)
    assert list(both[1].geoms[0].exterior.coords)[10] == (10.0, 50.0)
    # All three position forms at the 200,000-position limit, through the API
    ring = [[-80 + 0.01 * math.cos(a), 50 + 0.01 * math.sin(a)] for a in np.linspace(0, 2 * math.pi, MAX_POSITIONS)]
    ring = [[lon, lat, 3.0] if index % 2 else [lon, lat] for index, (lon, lat) in enumerate(ring[:-1])]
    created = create_field(api_client, core_user, {"type": "Polygon", "coordinates": [[*ring, ring[0]]]})
    assert len(created["geometry"]["coordinates"][0][0]) == MAX_POSITIONS
    assert created["geometry"]["coordinates"][0][0][1] == ring[1][:2]


@pytest.mark.parametrize(
    "crs",
    [
        {"type": "name", "properties": {"name": "urn:ogc:def:crs:OGC:1.3:CRS84"}},
        {"type": "name", "properties": {"name": "EPSG:4326"}},
        {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::4326"}},
        {"type": "EPSG", "properties": {"code": 4326}},
    ],
)
def test_a_crs_member_naming_wgs84_is_accepted(api_client, core_user, crs):
    geometry = square(10, 50) | {"crs": crs}
    assert (
        create_field(api_client, core_user, geometry=geometry)["geometry"]["coordinates"]
        == (create_field(api_client, core_user, geometry=square(10, 50))["geometry"]["coordinates"])
    )


def test_an_altitude_on_some_positions_only_is_dropped_too(api_client, core_user):
    """A ring mixing positions with and without an altitude (RFC 7946 allows each 2 or 3 numbers) was refused with
    numpy's "inhomogeneous shape" text."""
    ring = [[10, 50, 120.5], [10.01, 50], [10.01, 50.01], [10, 50.01], [10, 50, 120.5]]
    field = create_field(api_client, core_user, geometry={"type": "Polygon", "coordinates": [ring]})
    assert field["geometry"]["coordinates"] == [[[[10, 50], [10.01, 50], [10.01, 50.01], [10, 50.01], [10, 50]]]]


def test_an_altitude_in_positions_is_dropped(api_client, core_user):
    """GeoJSON positions may carry a height: the boundary is stored and answered in 2D (was a 500 on PUT, PATCH
    and create: a 3D shape in a 2D column), with the area of its 2D outline."""
    flat = square(10, 50)
    raised = {"type": "Polygon", "coordinates": [[[*p, 312.5] for p in ring] for ring in flat["coordinates"][0]]}
    field = create_field(api_client, core_user, geometry=raised)
    assert field["geometry"] == {
        "type": "MultiPolygon",
        "coordinates": [[[list(p) for p in flat["coordinates"][0][0]]]],
    }
    assert field["area"] == create_field(api_client, core_user, geometry=flat)["area"]
    url = field_url(core_user, field["id"])
    other = {"type": "Polygon", "coordinates": [[[*p, -1.5] for p in square(11, 50)["coordinates"][0][0]]]}
    assert api_client.put(f"{url}/boundary", {"geometry": other}, format="json").status_code == 200
    patched = api_client.patch(url, {"geometry": raised}, format="json")
    assert patched.status_code == 200 and patched.json()["geometry"] == field["geometry"]
    assert len(api_client.get(f"{url}/boundaries").json()) == 3


def test_create_without_geometry_or_with_unknown_keys_is_400(api_client, core_user):
    assert_problem(api_client.post(fields_url(core_user), {"name": "x"}, format="json"), 400, "validation")
    assert_problem(api_client.post(fields_url(core_user), {"geometry": None}, format="json"), 400, "validation")
    body = assert_problem(
        api_client.post(fields_url(core_user), {"geometry": square(1, 1), "colour": "red"}, format="json"),
        400,
        "validation",
    )
    assert body["fieldErrors"] == [{"field": "colour", "message": "Unknown field."}]
    # With an invalid geometry as well, both are named (the geometry's problem alone was answered)
    bad = {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [0, 0]]]}
    body = assert_problem(
        api_client.post(fields_url(core_user), {"geometry": bad, "colour": "red"}, format="json"),
        400,
        "invalidGeometry",
    )
    assert [e["field"] for e in body["fieldErrors"]] == ["geometry", "colour"]
    assert_problem(api_client.post(fields_url(core_user), [1, 2], format="json"), 400)
    assert_problem(
        api_client.post(fields_url(core_user), "{not json", content_type="application/json"), 400, "malformedRequest"
    )


def test_get_unknown_field_is_404(api_client, core_user):
    assert_problem(api_client.get(field_url(core_user, "nope")), 404, "notFound")
    assert_problem(api_client.get(f"{BASE}/users/{uuid.uuid4()}/fields/nope"), 404, "notFound")
    assert_problem(api_client.get(f"{BASE}/users/not-a-uuid/fields/nope"), 404, "notFound")


@pytest.mark.parametrize(
    "method, path",
    [("patch", "fields/nope"), ("put", "fields/nope/boundary"), ("put", "farms/12345"), ("put", "growers/12345")],
)
@pytest.mark.parametrize("body", [{"name": 7, "geometry": "no"}, "not a body"])
def test_changing_an_unknown_id_is_404_whatever_the_body(api_client, core_user, method, path, body):
    """The id is looked up before the body is judged (was a 400 naming the body's errors)."""
    url = f"{BASE}/users/{core_user.id}/{path}"
    assert_problem(getattr(api_client, method)(url, body, format="json"), 404, "notFound")


def test_patch_changes_name_and_farm_and_keeps_the_boundary(api_client, core_user):
    field = create_field(api_client, core_user, name="old")
    farm = api_client.post(f"{BASE}/users/{core_user.id}/farms", {"name": "F"}, format="json").json()
    response = api_client.patch(field_url(core_user, field["id"]), {"name": "new", "farmId": farm["id"]}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert (body["name"], body["farmId"], body["boundaries"]) == ("new", farm["id"], field["boundaries"])
    detached = api_client.patch(field_url(core_user, field["id"]), {"farmId": None}, format="json").json()
    assert detached["farmId"] is None


def test_patch_geometry_creates_a_new_boundary_and_keeps_the_old_one(api_client, core_user):
    field = create_field(api_client, core_user, square(10, 50))
    body = api_client.patch(field_url(core_user, field["id"]), {"geometry": square(10, 50, 0.02)}, format="json").json()
    assert len(body["boundaries"]) == 2 and body["boundaries"][0] == field["boundaries"][0]
    assert body["geometry"] == square(10, 50, 0.02)
    assert body["area"]["value"] == pytest.approx(4 * field["area"]["value"], rel=1e-3)
    statuses = dict(Boundary.objects.values_list("id", "status"))
    assert statuses[uuid.UUID(body["boundaries"][0])] == "INACTIVE"
    assert statuses[uuid.UUID(body["boundaries"][1])] == "ACTIVE"


@pytest.mark.parametrize(
    "body",
    [{}, {"name": 5}, {"farmId": "1"}, {"farmId": 999999}, {"geometry": {"type": "Point"}}, {"id": "new-id"}],
)
def test_bad_patches_are_400_and_change_nothing(api_client, core_user, body):
    field = create_field(api_client, core_user, name="keep")
    response = api_client.patch(field_url(core_user, field["id"]), body, format="json")
    assert_problem(response, 400)
    assert api_client.get(field_url(core_user, field["id"])).json() == field


def test_patch_with_a_farm_of_another_user_is_400(api_client, core_user, owner):
    other_user = CoreUserFactory(owner=owner)
    farm = api_client.post(f"{BASE}/users/{other_user.id}/farms", {"name": "F"}, format="json").json()
    field = create_field(api_client, core_user)
    assert_problem(api_client.patch(field_url(core_user, field["id"]), {"farmId": farm["id"]}, format="json"), 400)


def test_delete_removes_the_field_and_its_boundaries(api_client, core_user):
    field = create_field(api_client, core_user)
    assert api_client.delete(field_url(core_user, field["id"])).status_code == 204
    assert_problem(api_client.get(field_url(core_user, field["id"])), 404, "notFound")
    assert Boundary.objects.count() == 0


def test_provider_fields_cannot_be_changed_or_deleted(api_client, core_user):
    field = provider_field(core_user, provider_field_id="pa-1", provider_boundary_id="pb-1")
    url = field_url(core_user, field.pk)
    body = api_client.get(url).json()
    assert body["providerName"] == "ProviderA" and body["providerFieldId"] == "pa-1"
    assert_problem(api_client.delete(url), 403, "providerResourceReadOnly")
    assert_problem(api_client.patch(url, {"name": "x"}, format="json"), 403, "providerResourceReadOnly")
    assert_problem(api_client.put(f"{url}/boundary", {"geometry": square(2, 2)}, format="json"), 403)
    # Whatever the body: a 400 about it would invite a fix for nothing
    for bad in ({"bogus": 1}, {}, {"geometry": "x"}):
        assert_problem(api_client.patch(url, bad, format="json"), 403, "providerResourceReadOnly")
        assert_problem(api_client.put(f"{url}/boundary", bad, format="json"), 403, "providerResourceReadOnly")
    assert api_client.get(url).json() == body


def test_list_filters_pages_and_sorts(api_client, core_user, owner):
    other_user = CoreUserFactory(owner=owner)
    farm = api_client.post(f"{BASE}/users/{core_user.id}/farms", {}, format="json").json()
    ids = [create_field(api_client, core_user, square(i, 0), name=f"f{i}")["id"] for i in range(3)]
    api_client.patch(field_url(core_user, ids[0]), {"farmId": farm["id"]}, format="json")
    foreign = create_field(api_client, other_user, square(20, 0))["id"]
    field_create(core_user=core_user, geometry=parse_multipolygon(square(30, 0)), id="prov", provider_name="ProviderB")

    def listed(**params):
        response = api_client.get(f"{BASE}/fields", params)
        assert response.status_code == 200, response.content
        return [f["id"] for f in response.json()]

    assert set(listed()) == {*ids, foreign, "prov"}
    assert set(listed(coreUserId=str(other_user.id))) == {foreign}
    assert listed(farmId=farm["id"]) == [ids[0]]
    assert listed(provider="ProviderB") == ["prov"]
    assert set(listed(provider="ServiceOwn")) == {*ids, foreign}  # made in the service: no provider name
    assert listed(provider="ProviderA") == []
    for odd in ("Foo", "providerB", "PROVIDERB", "ProviderB "):  # answered an empty list
        body = assert_problem(api_client.get(f"{BASE}/fields", {"provider": odd}), 400, "validation")
        assert body["fieldErrors"][0]["field"] == "provider"
    assert listed(type="MERGED") == []
    assert listed(sort="name,desc", coreUserId=str(core_user.id)) == [*reversed(ids), "prov"]
    response = api_client.get(f"{BASE}/fields", {"size": 2, "page": 1, "sort": "name"})
    assert response["X-Total-Count"] == "5" and len(response.json()) == 2
    assert_problem(api_client.get(f"{BASE}/fields", {"type": "ROUND"}), 400)
    assert_problem(api_client.get(f"{BASE}/fields", {"coreUserId": "nope"}), 400)
    assert_problem(api_client.get(f"{BASE}/fields", {"farmId": "x"}), 400)
    for odd in ("1.5", "0", "9" * 30, "1_0", "\u0663"):  # past a 64-bit id was a 500 on SQLite
        body = assert_problem(api_client.get(f"{BASE}/fields", {"farmId": odd}), 400, "validation")
        assert body["fieldErrors"][0]["field"] == "farmId"
        body = assert_problem(api_client.get(f"{BASE}/farms", {"growerId": odd}), 400, "validation")
        assert body["fieldErrors"][0]["field"] == "growerId"
    assert_problem(api_client.get(f"{BASE}/fields", {"sort": "area"}), 400)
    assert_problem(api_client.get(f"{BASE}/fields", {"page": -1}), 400)


def test_fields_are_invisible_to_another_owner(api_client, other_client, core_user):
    field = create_field(api_client, core_user)
    url = field_url(core_user, field["id"])
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=url,
        resource_id=field["id"],
        list_urls=[f"{BASE}/fields", f"{BASE}/fields?coreUserId={core_user.id}"],
        updates=[("patch", {"name": "stolen"})],
        extra_urls=[
            ("post", fields_url(core_user), {"geometry": square(3, 3)}),
            ("get", f"{url}/weather?startTime=2024-01-01&endTime=2024-01-02", None),
            ("post", f"{fields_url(core_user)}/intersects", {"geometry": square(10, 50)}),
            ("post", f"{fields_url(core_user)}/intersect", [field["id"], field["id"]]),
        ],
        core_user=core_user,
    )
    assert Field.objects.count() == 1


def test_each_core_user_has_its_own_field_ids(api_client, other_client, owner, other_owner, core_user):
    """A client id was unique across the platform: another owner's field "1" made this one's a 409, which told it
    that some other owner had a field "1"."""
    other_user, second_user = CoreUserFactory(owner=other_owner), CoreUserFactory(owner=owner)
    # Given a field "1" of a core user of another owner, with a farm, merged with its field "2"
    from configs.services import config_user_set

    config_user_set(core_user=other_user, entries={"fieldsAutoMerge": True}, replace=True)
    theirs = other_client.post(fields_url(other_user), {"id": "1", "geometry": square(5, 5)}, format="json")
    assert theirs.status_code == 201, theirs.content
    farm = other_client.post(f"{BASE}/users/{other_user.id}/farms", {"name": "F"}, format="json").json()
    other_client.patch(field_url(other_user, "1"), {"farmId": farm["id"]}, format="json")
    other_client.post(fields_url(other_user), {"id": "2", "geometry": square(5.005, 5)}, format="json")

    # When this owner's core users each make a field "1"
    mine = api_client.post(fields_url(core_user), {"id": "1", "name": "mine", "geometry": square(1, 1)}, format="json")
    also = api_client.post(fields_url(second_user), {"id": "1", "geometry": square(2, 2)}, format="json")

    # Then each is made and answers under its own user; the same id twice for one user is still a 409
    assert (mine.status_code, also.status_code) == (201, 201), (mine.content, also.content)
    assert mine.json()["id"] == also.json()["id"] == "1" and mine.json()["boundaries"] != also.json()["boundaries"]
    again = api_client.post(fields_url(core_user), {"id": "1", "geometry": square(3, 3)}, format="json")
    assert_problem(again, 409, "fieldAlreadyExists")
    assert api_client.get(field_url(core_user, "1")).json()["name"] == "mine"
    assert_problem(api_client.get(field_url(other_user, "1")), 404, "notFound")
    # And the other owner's field is untouched, its relations named by its API ids
    one = other_client.get(field_url(other_user, "1")).json()
    merged_id = one["mergedFieldId"]
    merged = other_client.get(field_url(other_user, merged_id)).json()
    assert merged["type"] == "MERGED" and merged["sources"] == ["1", "2"]
    assert other_client.get(f"{BASE}/users/{other_user.id}/farms/{farm['id']}").json()["fieldIds"] == ["1"]
    overlap = other_client.post(f"{fields_url(other_user)}/intersect", ["1", "2"], format="json")
    assert overlap.status_code == 200 and overlap.json()["type"] == "MultiPolygon"
    found = other_client.post(f"{fields_url(other_user)}/intersects", {"geometry": square(5, 5)}, format="json")
    assert sorted(f["id"] for f in found.json()) == sorted(["1", "2", merged_id])
    # And deleting this owner's field "1" deletes that one only
    assert api_client.delete(field_url(core_user, "1")).status_code == 204
    assert other_client.get(field_url(other_user, "1")).status_code == 200
    assert api_client.get(field_url(second_user, "1")).status_code == 200


def test_requests_without_a_token_are_401(client, core_user):
    response = client.get(f"{BASE}/fields")
    assert_problem(response, 401, "unauthorized")


def test_a_file_is_attached_only_to_the_fields_that_still_exist(api_client, core_user):
    from fields.services import field_files_attach

    kept = field_create(core_user=core_user, geometry=parse_multipolygon(square(10, 50)))
    gone = field_create(core_user=core_user, geometry=parse_multipolygon(square(11, 50)))
    found = [kept, gone]  # what the conversion found, before another request deleted one of them
    api_client.delete(field_url(core_user, gone.pk))
    field_files_attach(fields=found, file_id="file-1")
    field_files_attach(fields=found, file_id="file-1")  # idempotent
    assert api_client.get(field_url(core_user, kept.pk)).json()["files"] == ["file-1"]
    assert list(FieldFile.objects.values_list("field_id", "file_id")) == [(kept.pk, "file-1")]


def _squares(count: int) -> list:
    """`count` small separate squares, as MultiPolygon coordinates."""
    return [
        [[[x, y], [x + 0.0005, y], [x + 0.0005, y + 0.0005], [x, y + 0.0005], [x, y]]]
        for i in range(count)
        for x, y in [(-80 + (i % 200) * 0.001, 50 + (i // 200) * 0.001)]
    ]


# The limits docs/fields.md promises (written here, not imported: a test that read the code's constant would follow
# a change of it that clients see)
MAX_POLYGONS, MAX_POSITIONS = 1_000, 200_000


def test_a_geometry_past_the_size_limits_is_400_and_nothing_is_written(api_client, core_user):
    """Bounded work for every request: 40,000 parts took minutes to check and overlay (the embedded database
    waited, and every other request failed meanwhile)."""
    many = {"type": "MultiPolygon", "coordinates": _squares(MAX_POLYGONS + 1)}
    ring = [[-80 + 0.01 * math.cos(a), 50 + 0.01 * math.sin(a)] for a in np.linspace(0, 2 * math.pi, MAX_POSITIONS)]
    long = {"type": "Polygon", "coordinates": [[*ring, ring[0]]]}
    for geometry, limit in ((many, f"at most {MAX_POLYGONS}"), (long, f"at most {MAX_POSITIONS}")):
        for url, body in (
            (fields_url(core_user), {"geometry": geometry}),
            (f"{fields_url(core_user)}/intersects", {"geometry": geometry}),
            (f"{BASE}/fields/query/intersects", {"geometry": geometry}),
        ):
            problem = assert_problem(api_client.post(url, body, format="json"), 400, "invalidGeometry")
            assert limit in problem["detail"]
    assert not Field.objects.exists()
    # At the limits, taken
    assert create_field(api_client, core_user, {"type": "MultiPolygon", "coordinates": _squares(MAX_POLYGONS)})
