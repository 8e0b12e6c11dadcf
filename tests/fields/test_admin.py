"""The Django admin shows boundaries on a map but cannot change them (boundaries are immutable)."""

import json
import re
from datetime import timedelta
from uuid import UUID

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from shapely.geometry import shape

from configs.services import config_owner_update
from fields.admin import BoundaryInline
from fields.models import Boundary, Farm, Field, Grower
from tests.adminforms import form_data, page_queries
from tests.factories import CoreUserFactory
from tests.fields.helpers import create_field, field_url, provider_field, rect, square

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

ELSEWHERE = json.dumps(square(20, 20))


@pytest.fixture
def admin_client_superuser():
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "root-password"))
    return client


def test_the_boundary_change_page_shows_a_map_without_editing_tools(api_client, core_user, admin_client_superuser):
    field = create_field(api_client, core_user, square(0, 0))
    response = admin_client_superuser.get(f"/admin/fields/boundary/{field['boundaries'][0]}/change/")
    assert response.status_code == 200
    page = response.content.decode()
    # A Leaflet map of the boundary, with Leaflet served by us, and nothing to edit it with
    assert "L.map(" in page and "L.geoJSON(" in page and "/static/leaflet/leaflet.js" in page
    assert 'name="geometry"' not in page and "leaflet.draw" not in page.lower()
    assert admin_client_superuser.get("/admin/fields/boundary/add/").status_code == 403


def test_the_map_draws_the_boundary_as_stored(api_client, core_user, admin_client_superuser):
    """GDAL's GeoJSON rounded positions to 15 decimals (0.30000000000000004 was drawn at 0.3, 5e-324 at 0)."""
    ring = [[0.1 + 0.2, 5e-324], [0.31, 5e-324], [0.31, 0.01], [0.1 + 0.2, 0.01], [0.1 + 0.2, 5e-324]]
    field = create_field(api_client, core_user, {"type": "Polygon", "coordinates": [ring]})
    boundary = UUID(field["boundaries"][0])
    page = admin_client_superuser.get(f"/admin/fields/boundary/{boundary}/change/").content.decode()
    script = re.search(rf'<script id="id_geometry_{boundary.hex}_data" type="application/json">(.*?)</script>', page)
    assert json.loads(script[1])["shape"] == field["geometry"]
    assert json.loads(script[1])["shape"]["coordinates"][0][0][0] == [0.30000000000000004, 5e-324]


def test_the_map_is_a_named_region_described_in_words(api_client, core_user, admin_client_superuser):
    """The map was a focusable element with no name, and the shape was nowhere on the page as text (WCAG 1.1.1,
    4.1.2): a screen reader could not tell what the boundary was."""
    outer = [[8.5, 47.25], [8.5125, 47.25], [8.5125, 47.2625], [8.5, 47.2625], [8.5, 47.25]]
    hole = [[8.505, 47.255], [8.5075, 47.255], [8.5075, 47.2575], [8.505, 47.255]]
    geometry = {"type": "MultiPolygon", "coordinates": [[outer, hole], [[[9, 48], [9.01, 48], [9, 48.01], [9, 48]]]]}
    field = create_field(api_client, core_user, geometry)
    boundary = UUID(field["boundaries"][0])
    page = admin_client_superuser.get(f"/admin/fields/boundary/{boundary}/change/").content.decode()
    map_id = f"id_geometry_{boundary.hex}"
    assert re.search(
        rf'<div id="{map_id}" class="readonly-map" role="region" aria-label="Map of the boundary" '
        rf'aria-describedby="{map_id}_text"',
        page,
    )
    words = re.search(rf'<p id="{map_id}_text" class="help">(.*?)</p>', page)[1]
    assert words == (
        "2 polygons with 1 hole, 13 positions, from longitude 8.500000 to 9.010000 and latitude 47.250000 to 48.010000."
    )


def test_the_field_page_shows_each_boundary_on_its_own_map(api_client, core_user, admin_client_superuser):
    field = create_field(api_client, core_user, square(0, 0))
    moved = api_client.patch(field_url(core_user, field["id"]), {"geometry": square(1, 1)}, format="json").json()
    page = admin_client_superuser.get(f"/admin/fields/field/{Field.objects.get(public_id=field['id']).pk}/change/")
    maps = re.findall(r'<div id="(id_geometry_[0-9a-f]{32})" class="readonly-map"', page.content.decode())
    assert sorted(maps) == sorted(f"id_geometry_{UUID(boundary).hex}" for boundary in moved["boundaries"])


def test_a_boundary_cannot_be_changed_here(api_client, core_user, admin_client_superuser):
    # Given a field created through the service, and the admin page of its boundary
    field = create_field(api_client, core_user, square(0, 0))
    boundary = Boundary.objects.get(pk=field["boundaries"][0])
    url = f"/admin/fields/boundary/{boundary.pk}/change/"
    data = form_data(admin_client_superuser.get(url))
    # When a superuser posts the form with another geometry (and another status)
    response = admin_client_superuser.post(url, {**data, "geometry": ELSEWHERE, "status": "INACTIVE"})
    # Then the admin refuses it, and the boundary is exactly what the service stored
    assert response.status_code == 403
    stored = Boundary.objects.get(pk=boundary.pk)
    assert stored.geometry.equals_exact(boundary.geometry, 0) and stored.status == Boundary.Status.ACTIVE
    assert (stored.area_ha, stored.field_id) == (boundary.area_ha, boundary.field_id)
    assert api_client.get(f"/services/fields/api/users/{core_user.id}/fields/{field['id']}").json() == field


def test_the_field_change_form_changes_the_name_alone(api_client, core_user, admin_client_superuser):
    field = create_field(api_client, core_user, square(0, 0))
    other = create_field(api_client, core_user, square(5, 5))
    stranger = CoreUserFactory()
    url = f"/admin/fields/field/{Field.objects.get(public_id=field['id']).pk}/change/"
    data = form_data(admin_client_superuser.get(url))
    assert data["boundaries-TOTAL_FORMS"] == 1
    # Change the inline boundary's geometry, point the field at another field's boundary, move it to another core
    # user, change its id, and rename it.
    response = admin_client_superuser.post(
        url,
        {
            **data,
            "boundaries-0-geometry": ELSEWHERE,
            "boundary": other["boundaries"][0],
            "core_user": stranger.pk,
            "type": "MERGED",
            "public_id": "renumbered",
            "legacy": "on",
            "name": "renamed",
        },
    )
    assert response.status_code == 302
    body = api_client.get(f"/services/fields/api/users/{core_user.id}/fields/{field['id']}").json()
    assert body["name"] == "renamed"
    assert body["updatedTime"] > field["updatedTime"]
    assert {**body, "name": field["name"], "updatedTime": field["updatedTime"]} == field


def test_fields_farms_and_growers_are_not_added_nor_changed_here(api_client, core_user, admin_client_superuser):
    for model in ("field", "boundary", "farm", "grower", "fieldfile"):
        assert admin_client_superuser.get(f"/admin/fields/{model}/add/").status_code == 403, model
    farm = api_client.post(f"/services/fields/api/users/{core_user.id}/farms", {"name": "Home"}, format="json").json()
    url = f"/admin/fields/farm/{farm['id']}/change/"
    page = admin_client_superuser.get(url)
    assert page.status_code == 200 and 'name="name"' not in page.content.decode()  # shown, not a form
    assert admin_client_superuser.post(url, {"name": "Elsewhere"}).status_code == 403
    assert Farm.objects.get(pk=farm["id"]).name == "Home"


def test_a_renamed_field_is_announced(
    transactional_db, owner, core_user, api_client, webhook_receiver, subscribe, admin_client_superuser
):
    subscribe(owner, webhook_receiver, ["fieldUpdated"])
    field = create_field(api_client, core_user, square(0, 0))
    url = f"/admin/fields/field/{Field.objects.get(public_id=field['id']).pk}/change/"
    data = form_data(admin_client_superuser.get(url))
    assert admin_client_superuser.post(url, {**data, "name": "renamed"}).status_code == 302
    webhook_receiver.wait_for(1)
    assert [(event["type"], event["fieldId"]) for event in webhook_receiver.events()] == [("fieldUpdated", field["id"])]


def test_a_provider_field_is_shown_not_changed_nor_deleted(core_user, admin_client_superuser):
    field = provider_field(core_user, name="Theirs")
    url = f"/admin/fields/field/{field.pk}/"
    assert admin_client_superuser.get(f"{url}change/").status_code == 200
    assert admin_client_superuser.post(f"{url}change/", {"name": "Ours"}).status_code == 403
    assert admin_client_superuser.post(f"{url}delete/", {"post": "yes"}).status_code == 403
    assert Field.objects.get(pk=field.pk).name == "Theirs"


def test_deleting_a_source_field_here_updates_its_merged_field(api_client, owner, core_user, admin_client_superuser):
    # Given three overlapping fields auto-merged into one
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(api_client, core_user, rect(0, 0, 0.02, 0.02))
    create_field(api_client, core_user, rect(0.01, 0, 0.03, 0.02))
    c = create_field(api_client, core_user, rect(0.025, 0, 0.04, 0.02))
    merged_id = c["mergedFieldId"]
    # When a superuser deletes the first one here (the confirmation page, then its form)
    url = f"/admin/fields/field/{Field.objects.get(public_id=a['id']).pk}/delete/"
    assert admin_client_superuser.get(url).status_code == 200
    assert admin_client_superuser.post(url, {"post": "yes"}).status_code == 302
    # Then the field is gone and the merged field is the union of the other two, as a DELETE through the API makes it
    assert api_client.get(field_url(core_user, a["id"])).status_code == 404
    merged = api_client.get(field_url(core_user, merged_id)).json()
    assert len(merged["sources"]) == 2 and a["id"] not in merged["sources"]
    assert shape(merged["geometry"]).equals(shape(rect(0.01, 0, 0.04, 0.02)))


def test_a_field_name_with_control_characters_is_a_form_error_as_through_the_api(
    api_client, core_user, admin_client_superuser
):
    field = create_field(api_client, core_user, square(0, 0))
    url = f"/admin/fields/field/{Field.objects.get(public_id=field['id']).pk}/change/"
    data = form_data(admin_client_superuser.get(url))
    response = admin_client_superuser.post(url, {**data, "name": "North\x1b[2J"})
    assert response.status_code == 200
    assert response.context["adminform"].form.errors["name"] == [
        "Control characters are not allowed (tab and line breaks are)."
    ]
    assert api_client.get(field_url(core_user, field["id"])).json()["name"] == field["name"]


def test_a_fields_page_maps_its_latest_boundaries_in_as_many_queries_however_many_it_has(
    api_client, core_user, admin_client_superuser
):
    """A field of 151 boundaries drew 151 maps in 159 queries (each boundary's title read its field again)."""
    field = Field.objects.get(public_id=create_field(api_client, core_user, square(0, 0))["id"])
    other = Field.objects.get(public_id=create_field(api_client, core_user, square(5, 5))["id"])
    url = f"/admin/fields/field/{field.pk}/change/"
    one = page_queries(admin_client_superuser, url)
    # Given 150 earlier boundaries more
    Boundary.objects.bulk_create(
        Boundary(field=field, geometry=field.boundary.geometry, area_ha=1.0, status=Boundary.Status.INACTIVE)
        for _ in range(150)
    )
    Boundary.objects.filter(field=field).exclude(pk=field.boundary_id).update(created_at=field.boundary.created_at)
    Boundary.objects.filter(pk=field.boundary_id).update(created_at=field.boundary.created_at + timedelta(seconds=1))
    assert page_queries(admin_client_superuser, url) == one
    # The page maps the latest ones, the active one first, and links to the list of them all
    page = admin_client_superuser.get(url)
    maps = re.findall(r'<div id="id_geometry_([0-9a-f]{32})" class="readonly-map"', page.content.decode())
    assert len(maps) == BoundaryInline.shown and UUID(maps[0]) == field.boundary_id
    # (underlined: the admin tells links from text by colour alone)
    [link] = re.findall(
        r'<a href="([^"]+)" style="text-decoration: underline">All 151 of its boundaries</a>', page.content.decode()
    )
    listed = admin_client_superuser.get(link.replace("&amp;", "&"))
    assert listed.status_code == 200 and listed.context["cl"].result_count == 151
    assert not listed.context["cl"].queryset.filter(field=other).exists()


def test_the_farm_list_queries_alike_however_many_farms_it_shows(core_user, admin_client_superuser):
    def farm():
        Farm.objects.create(core_user=CoreUserFactory(), name="Farm", grower=Grower.objects.create(core_user=core_user))

    farm()
    one = page_queries(admin_client_superuser, "/admin/fields/farm/")
    for _ in range(10):
        farm()
    assert page_queries(admin_client_superuser, "/admin/fields/farm/") == one
