"""Geometric queries: intersects with the threshold rule, the deprecated query, intersect."""

import pytest
from shapely.geometry import LinearRing, shape

from configs.services import config_owner_update
from fields.geodesy import geodesic_area_ha, geodesic_areas_m2
from fields.geometry import overlaps, parse_multipolygon
from fields.models import Field
from fields.services import boundary_provider_sync, field_create, field_files_attach, fields_overlapping
from tests.factories import CoreUserFactory
from tests.fields.helpers import BASE, create_field, field_url, fields_url, provider_field, rect, square
from tests.tenancy import assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def intersects(client, core_user, geometry, threshold=None):
    body = {"geometry": geometry} if threshold is None else {"geometry": geometry, "intersectionThreshold": threshold}
    response = client.post(f"{fields_url(core_user)}/intersects", body, format="json")
    assert response.status_code == 200, response.content[:500]
    return [f["id"] for f in response.json()]


def test_the_specs_threshold_example(api_client, core_user):
    # Given a field of 100 units and a geometry of 10 units whose half lies inside the field (split on a
    # meridian, so the halves have exactly equal geodesic areas): the intersection is 50 % of the geometry
    # and 5 % of the field, so the highest ratio is 50 %.
    field = create_field(api_client, core_user, rect(0.0, 0.0, 0.1, 0.1))
    geometry = rect(0.095, 0.05, 0.105, 0.06)
    # Then thresholds up to 50 are satisfied, and thresholds above 50 (75, 100) are not.
    for threshold in (0.01, 5, 49.9, 50):
        assert intersects(api_client, core_user, geometry, threshold) == [field["id"]], threshold
    for threshold in (50.1, 75, 100):
        assert intersects(api_client, core_user, geometry, threshold) == [], threshold


def _triangle(west: float, south: float, width: float) -> dict:
    ring = [[west, south], [west + width, south], [west + width / 2, south + width / 2], [west, south]]
    return {"type": "MultiPolygon", "coordinates": [[ring]]}


@pytest.mark.parametrize(
    "geometry",
    [
        rect(30.08, 10.04, 30.12, 10.06),  # a box 0.04 degrees wide at 10 N
        _triangle(29.9505, 45.0, 0.099),  # a triangle 0.099 degrees wide at 45 N, its apex on the fields' edge
        _triangle(29.75, 60.0, 0.5),
    ],
    ids=["box", "triangle", "wide-triangle"],
)
def test_a_geometry_halved_by_two_fields_covers_50_percent_of_itself_in_each(api_client, core_user, geometry):
    # Given two fields side by side, their common edge on the meridian 30.0 (or 30.1), and a geometry whose halves
    # lie one in each: edges are straight lines in longitude and latitude, so each half is exactly half of it
    edge = 30.1 if geometry["coordinates"][0][0][0][0] > 30 else 30.0
    west = create_field(api_client, core_user, rect(edge - 1, 0.0, edge, 80.0))
    east = create_field(api_client, core_user, rect(edge, 0.0, edge + 1, 80.0))
    # Then both are answered up to the spec's 50 % and neither above (measured with geodesic edges, a 0.1 degree
    # triangle's halves came out 0.02 % larger than the whole; the box's 0.0000014 % smaller)
    assert sorted(intersects(api_client, core_user, geometry, 50)) == sorted([west["id"], east["id"]])
    assert intersects(api_client, core_user, geometry, 50.000001) == []


def test_the_larger_of_both_ratios_counts(api_client, core_user):
    # A small field fully inside a large geometry: 100 % of the field, ~1 % of the geometry.
    small = create_field(api_client, core_user, rect(0.0, 0.0, 0.01, 0.01))
    assert intersects(api_client, core_user, rect(-0.045, -0.045, 0.055, 0.055), 100) == [small["id"]]
    # Geometry fully inside the field: 100 % of the geometry.
    assert intersects(api_client, core_user, rect(0.002, 0.002, 0.004, 0.004), 100) == [small["id"]]


def test_default_threshold_and_touching_fields(api_client, core_user):
    a = create_field(api_client, core_user, rect(0, 0, 0.01, 0.01))["id"]
    b = create_field(api_client, core_user, rect(0.01, 0, 0.02, 0.01))["id"]  # shares an edge with a
    create_field(api_client, core_user, rect(1, 1, 1.01, 1.01))
    # A geometry that only touches b along an edge does not intersect it by any area.
    assert intersects(api_client, core_user, rect(0.005, 0.005, 0.01, 0.006)) == [a]
    assert sorted(intersects(api_client, core_user, rect(0.005, 0.005, 0.015, 0.006))) == sorted([a, b])
    assert intersects(api_client, core_user, rect(5, 5, 5.01, 5.01)) == []


def test_the_answer_is_in_field_id_order(api_client, core_user, owner):
    for field_id in ("b-north", "a-south", "c-east"):
        create_field(api_client, core_user, square(0, 0), id=field_id)
    assert intersects(api_client, core_user, square(0, 0)) == ["a-south", "b-north", "c-east"]
    # Owner-wide, another core user's field of one id comes beside it
    create_field(api_client, CoreUserFactory(owner=owner), square(0, 0), id="a-south")
    response = api_client.post(f"{BASE}/fields/query/intersects", {"geometry": square(0, 0)}, format="json")
    assert [f["id"] for f in response.json()] == ["a-south", "a-south", "b-north", "c-east"]


def test_without_a_threshold_an_overlap_of_one_percent_is_answered(api_client, core_user):
    """The default threshold is 0.01 %, on both queries: a geometry 1 % inside a field (0.01 % of the field) finds
    it, and so does one over 0.05 % of both."""
    field = create_field(api_client, core_user, rect(0, 0, 0.1, 0.1))["id"]
    assert intersects(api_client, core_user, rect(0.0999, 0.05, 0.1099, 0.06)) == [field]
    assert intersects(api_client, core_user, rect(0.0999, 0.05, 0.1099, 0.06), 2) == []
    # A field-sized geometry over 0.05 % of the field (and of itself): under any default above 0.05 it was lost.
    sliver = rect(0.09995, 0, 0.19995, 0.1)
    assert intersects(api_client, core_user, sliver) == [field]
    assert intersects(api_client, core_user, sliver, 0.1) == []
    deprecated = api_client.post(f"{BASE}/fields/query/intersects", {"geometry": sliver}, format="json")
    assert [f["id"] for f in deprecated.json()] == [field]


def test_only_the_users_fields_are_answered(api_client, core_user, owner):
    other_user = CoreUserFactory(owner=owner)
    mine = create_field(api_client, core_user, square(0, 0))["id"]
    theirs = create_field(api_client, other_user, square(0, 0))["id"]
    assert intersects(api_client, core_user, square(0, 0)) == [mine]
    # The deprecated query covers every user of the owner, with the default threshold.
    response = api_client.post(f"{BASE}/fields/query/intersects", {"geometry": square(0, 0)}, format="json")
    assert response.status_code == 200
    assert sorted(f["id"] for f in response.json()) == sorted([mine, theirs])
    assert response.json()[0]["geometry"] == square(0, 0)


def test_the_deprecated_query_does_not_see_another_owners_fields(api_client, other_client, core_user):
    create_field(api_client, core_user, square(0, 0))
    response = other_client.post(f"{BASE}/fields/query/intersects", {"geometry": square(0, 0)}, format="json")
    assert response.status_code == 200 and response.json() == []


def test_inactive_boundaries_do_not_intersect(api_client, core_user):
    field = create_field(api_client, core_user, square(0, 0))
    api_client.put(f"{fields_url(core_user)}/{field['id']}/boundary", {"geometry": square(3, 3)}, format="json")
    assert intersects(api_client, core_user, square(0, 0)) == []
    assert intersects(api_client, core_user, square(3, 3)) == [field["id"]]


@pytest.mark.parametrize(
    "body",
    [
        {"geometry": square(0, 0), "intersectionThreshold": 0},
        {"geometry": square(0, 0), "intersectionThreshold": 0.001},
        {"geometry": square(0, 0), "intersectionThreshold": 100.5},
        {"geometry": square(0, 0), "intersectionThreshold": "50"},
        {"geometry": square(0, 0), "intersectionThreshold": True},  # a JSON boolean is no number
        {"geometry": square(0, 0), "intersectionThreshold": None},
        {"intersectionThreshold": 5},
        {"geometry": square(0, 0), "extra": 1},
    ],
)
def test_bad_intersects_bodies_are_400(api_client, core_user, body):
    assert_problem(api_client.post(f"{fields_url(core_user)}/intersects", body, format="json"), 400, "validation")


def test_invalid_query_geometry_is_400_invalid_geometry(api_client, core_user):
    bowtie = {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}
    assert_problem(
        api_client.post(f"{fields_url(core_user)}/intersects", {"geometry": bowtie}, format="json"),
        400,
        "invalidGeometry",
    )
    assert_problem(
        api_client.post(f"{BASE}/fields/query/intersects", {"geometry": bowtie}, format="json"), 400, "invalidGeometry"
    )


def test_intersects_answers_each_field_exactly_as_get_does(api_client, core_user, owner):
    # The query reads rows, not models: every key of every kind of field must still be the one GET answers.
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    farm = api_client.post(f"{BASE}/users/{core_user.id}/farms", {"name": "Farm"}, format="json").json()
    a = create_field(api_client, core_user, rect(0, 0, 0.02, 0.02), name="a", farmId=farm["id"])["id"]
    b = create_field(api_client, core_user, rect(0.01, 0, 0.03, 0.02), id="b")["id"]  # merges with a
    api_client.put(f"{field_url(core_user, b)}/boundary", {"geometry": rect(0.01, 0, 0.035, 0.02)}, format="json")
    provider = field_create(
        core_user=core_user,
        geometry=parse_multipolygon(rect(0.02, 0.01, 0.05, 0.03)),
        provider_name="ProviderA",
        provider_id=7,
        provider_field_id="pf",
        provider_boundary_id="pb",
        provider_status="ACTIVE",
    )
    field_files_attach(fields=Field.objects.filter(core_user=core_user, public_id__in=[a, b]), file_id="file-2")
    field_files_attach(fields=Field.objects.filter(core_user=core_user, public_id=a), file_id="file-1")
    response = api_client.post(
        f"{fields_url(core_user)}/intersects", {"geometry": rect(0, 0, 0.06, 0.04)}, format="json"
    )
    assert response.status_code == 200
    answered = response.json()
    expected = [api_client.get(field_url(core_user, f["id"])).json() for f in answered]
    assert answered == expected
    kinds = {f["type"] for f in answered}, {bool(f.get("providerName")) for f in answered}
    assert kinds == ({"ORIGINAL", "MERGED"}, {True, False}) and provider.public_id in [f["id"] for f in answered]
    files = {f["id"]: f["files"] for f in answered}
    assert (files[a], files[b]) == (["file-2", "file-1"], ["file-2"])  # in the order they were attached
    assert [f["files"] for f in answered if f["id"] == a] == [["file-2", "file-1"]]
    assert [len(f["boundaries"]) for f in answered if f["id"] == b] == [2]
    # The deprecated query of all the owner's users renders the same way.
    deprecated = api_client.post(f"{BASE}/fields/query/intersects", {"geometry": rect(0, 0, 0.06, 0.04)}, format="json")
    assert deprecated.json() == expected


def test_overlap_service_for_other_apps(api_client, core_user):
    field = create_field(api_client, core_user, rect(0.0, 0.0, 0.1, 0.1))
    matches = fields_overlapping(core_users=[core_user], geometry=parse_multipolygon(rect(0.095, 0.05, 0.105, 0.06)))
    assert [(f.pk, round(o.of_geometry, 6)) for f, o in matches] == [(field["id"], 50.0)]
    assert matches[0][1].of_field == pytest.approx(0.5, rel=1e-3)


# A square frame: 0.1 degree wide, with a hole 0.08 wide in its middle.
FRAME = {
    "type": "Polygon",
    "coordinates": [
        [[0, 0], [0.1, 0], [0.1, 0.1], [0, 0.1], [0, 0]],
        [[0.01, 0.01], [0.01, 0.09], [0.09, 0.09], [0.09, 0.01], [0.01, 0.01]],
    ],
}


def test_a_geometry_in_a_fields_hole_or_bounding_box_does_not_overlap_it(api_client, core_user, owner):
    """Candidates are the rows meeting the boxes of the geometry's polygons (`fields.geometry.candidate_window`): a
    field whose outline does not touch the geometry, inside a box, is still no answer, and merges with nothing."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    frame = create_field(api_client, core_user, FRAME)
    l_shape = [[1, 0], [1.1, 0], [1.1, 0.1], [1.09, 0.1], [1.09, 0.01], [1, 0.01], [1, 0]]
    notch = create_field(api_client, core_user, {"type": "Polygon", "coordinates": [l_shape]})
    # In the frame's hole, and in the box of the L-shaped field's notch: nothing, however small the threshold
    for geometry in (rect(0.02, 0.02, 0.08, 0.08), rect(1.02, 0.02, 1.08, 0.08)):
        assert intersects(api_client, core_user, geometry, 0.01) == []
        deprecated = api_client.post(f"{BASE}/fields/query/intersects", {"geometry": geometry}, format="json")
        assert deprecated.json() == []
        assert fields_overlapping(core_users=[core_user], geometry=parse_multipolygon(geometry)) == []
        inside = create_field(api_client, core_user, geometry)
        assert "mergedFieldId" not in inside
    # Across the frame's edge into its hole: the part on the frame counts
    assert intersects(api_client, core_user, rect(0.005, 0.04, 0.02, 0.05)) == [frame["id"]]
    assert intersects(api_client, core_user, rect(1.085, 0.04, 1.095, 0.05)) == [notch["id"]]
    assert Field.objects.filter(type="MERGED").count() == 0


# --- intersect -------------------------------------------------------------------------------------


def test_intersect_answers_the_common_multipolygon(api_client, core_user):
    a = create_field(api_client, core_user, rect(0, 0, 0.02, 0.02))["id"]
    b = create_field(api_client, core_user, rect(0.01, 0.01, 0.03, 0.03))["id"]
    c = create_field(api_client, core_user, rect(0.015, 0, 0.05, 0.05))["id"]
    response = api_client.post(f"{fields_url(core_user)}/intersect", [a, b], format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["type"] == "MultiPolygon"
    assert shape(body).equals(shape(rect(0.01, 0.01, 0.02, 0.02)))
    three = api_client.post(f"{fields_url(core_user)}/intersect", [a, b, c], format="json").json()
    assert shape(three).equals(shape(rect(0.015, 0.01, 0.02, 0.02)))
    assert geodesic_area_ha(shape(three)) > 0


def _wound_as_rfc_7946_asks(geometry: dict) -> bool:
    """Exteriors counterclockwise, holes clockwise."""
    return all(
        LinearRing(ring).is_ccw == (index == 0)
        for polygon in geometry["coordinates"]
        for index, ring in enumerate(polygon)
    )


def test_geometries_are_answered_wound_as_rfc_7946_asks(api_client, core_user, owner):
    """A union or an intersection came out of GEOS clockwise, and a field sent so was answered so."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    outline = rect(0, 0, 0.02, 0.02)["coordinates"][0][0]
    hole = rect(0.002, 0.002, 0.004, 0.004)["coordinates"][0][0]
    clockwise = {"type": "MultiPolygon", "coordinates": [[outline[::-1], hole]]}  # both wound the wrong way
    a = create_field(api_client, core_user, clockwise)
    b = create_field(api_client, core_user, rect(0.01, 0.01, 0.03, 0.03))
    assert shape(a["geometry"]).equals(shape(clockwise))
    merged = api_client.get(field_url(core_user, b["mergedFieldId"])).json()
    common = api_client.post(f"{fields_url(core_user)}/intersect", [a["id"], b["id"]], format="json").json()
    found = api_client.post(f"{fields_url(core_user)}/intersects", {"geometry": rect(0, 0, 0.05, 0.05)}, format="json")
    assert found.status_code == 200 and len(found.json()) == 3
    boundaries = api_client.get(f"{field_url(core_user, a['id'])}/boundaries").json()
    answered = [a["geometry"], merged["geometry"], common, boundaries[0]["geometry"]]
    answered += [field["geometry"] for field in found.json()]
    for geometry in answered:
        assert _wound_as_rfc_7946_asks(geometry), geometry
    assert len(merged["geometry"]["coordinates"][0]) == 2  # the hole stayed a hole of the union


def test_intersect_of_disjoint_fields_is_an_empty_multipolygon(api_client, core_user):
    a = create_field(api_client, core_user, square(0, 0))["id"]
    b = create_field(api_client, core_user, square(5, 5))["id"]
    body = api_client.post(f"{fields_url(core_user)}/intersect", [a, b], format="json").json()
    assert body == {"type": "MultiPolygon", "coordinates": []}


def test_intersect_needs_two_fields_of_the_user(api_client, core_user, owner):
    a = create_field(api_client, core_user, square(0, 0))["id"]
    theirs = create_field(api_client, CoreUserFactory(owner=owner), square(0, 0))["id"]
    url = f"{fields_url(core_user)}/intersect"
    for body in ([], [a], [a, a], [a, "missing"], [a, theirs], {"ids": [a, theirs]}, [a, 5], "x"):
        assert_problem(api_client.post(url, body, format="json"), 400)
    for body in ([], [a], [a, a]):  # the body as a whole: its field is "" (supplement: validation has fieldErrors)
        answer = assert_problem(api_client.post(url, body, format="json"), 400, "validation")
        assert answer["fieldErrors"] == [{"field": "", "message": "Give the ids of at least two different fields."}]
    # A field error names the place in the body as sent, a repeated id counted (it named [1] here)
    body = assert_problem(api_client.post(url, [a, a, "missing"], format="json"), 400, "validation")
    assert body["fieldErrors"] == [{"field": "[2]", "message": "Unknown field."}]
    # An unknown id given twice is named once, at its first place
    body = assert_problem(api_client.post(url, [a, "missing", a, "missing"], format="json"), 400, "validation")
    assert body["fieldErrors"] == [{"field": "[1]", "message": "Unknown field."}]


def test_intersect_leaves_out_fields_whose_current_boundary_is_inactive(api_client, core_user):
    """As intersects does: a provider field whose provider reports its boundary inactive has no ACTIVE one."""
    mine = create_field(api_client, core_user, square(1, 1))["id"]
    provider = provider_field(core_user, square(1, 1))
    url = f"{fields_url(core_user)}/intersect"
    assert api_client.post(url, [mine, provider.pk], format="json").status_code == 200
    boundary_provider_sync(field=provider, provider_boundary_id="pb", provider_status="INACTIVE")
    body = assert_problem(api_client.post(url, [mine, provider.pk], format="json"), 400, "validation")
    assert body["fieldErrors"] == [{"field": "[1]", "message": "Unknown field."}]
    assert intersects(api_client, core_user, square(1, 1)) == [mine]
    # Its current boundary is still what the field and GET .../boundary show, with its status.
    current = api_client.get(f"{fields_url(core_user)}/{provider.pk}/boundary").json()
    assert (current["status"], current["providerStatus"]) == ("INACTIVE", "INACTIVE")


def test_intersect_takes_at_most_1000_ids_and_names_each_unknown_one(api_client, core_user):
    a, b = (create_field(api_client, core_user, square(0, 0))["id"] for _ in range(2))
    url = f"{fields_url(core_user)}/intersect"
    body = assert_problem(
        api_client.post(url, [a, b] + [f"x{i}" for i in range(999)], format="json"), 400, "validation"
    )
    assert body["detail"] == "Must have at most 1000 items."
    ids = [a, *(f"x{i}" for i in range(997)), b]
    body = assert_problem(api_client.post(url, ids, format="json"), 400, "validation")
    assert [e["field"] for e in body["fieldErrors"]] == [f"[{i}]" for i in range(1, 998)]
    assert body["detail"].endswith("and 987 more.")


def test_fields_that_only_touch_never_overlap_whatever_the_threshold():
    """A shared edge is no overlap even at a threshold far below the API's least (a configuration's attach and
    merge percentages take any above 0): zero-area contact never counts."""
    field = parse_multipolygon(rect(0, 0, 0.01, 0.01))
    area_m2 = geodesic_areas_m2([field])[0]
    [touching] = overlaps([field], [area_m2], parse_multipolygon(rect(0.01, 0, 0.02, 0.01)))
    assert touching.area_m2 == 0 and not touching.satisfies(1e-12)
    [sliver] = overlaps([field], [area_m2], parse_multipolygon(rect(0.00999, 0, 0.02, 0.01)))
    assert sliver.area_m2 > 0 and sliver.satisfies(1e-12) and not sliver.satisfies(1)
