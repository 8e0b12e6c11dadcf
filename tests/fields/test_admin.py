"""The Django admin shows boundaries on a map but cannot change them (boundaries are immutable)."""

import json

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from fields.models import Boundary, Field
from tests.fields.helpers import create_field, square

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

ELSEWHERE = json.dumps(square(20, 20))


@pytest.fixture
def admin_client_superuser():
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "root-password"))
    return client


def form_data(response) -> dict:
    """What a browser would post back for the change form of `response`, unchanged: the main form's and the
    inline formsets' values plus their management forms."""
    data = {}
    forms = [response.context["adminform"].form]
    for inline in response.context["inline_admin_formsets"]:
        formset = inline.formset
        data.update({f"{formset.prefix}-{key}": value for key, value in formset.management_form.initial.items()})
        forms.extend(formset.forms)
    for form in forms:
        for name, field in form.fields.items():
            value = form.initial.get(name, field.initial)
            if value is None or field.disabled:
                continue
            data[form.add_prefix(name)] = getattr(value, "pk", value)
    return data


def test_the_boundary_change_page_shows_a_map_without_editing_tools(api_client, core_user, admin_client_superuser):
    field = create_field(api_client, core_user, square(0, 0))
    response = admin_client_superuser.get(f"/admin/fields/boundary/{field['boundaries'][0]}/change/")
    assert response.status_code == 200
    page = response.content.decode()
    assert "new MapWidget(options)" in page and "removeInteraction" in page
    assert 'name="geometry"' not in page and "Delete all Features" not in page
    assert admin_client_superuser.get("/admin/fields/boundary/add/").status_code == 403


def test_posting_a_changed_geometry_does_not_change_the_boundary(api_client, core_user, admin_client_superuser):
    # Given a field created through the service, and the admin change page of its boundary
    field = create_field(api_client, core_user, square(0, 0))
    boundary = Boundary.objects.get(pk=field["boundaries"][0])
    url = f"/admin/fields/boundary/{boundary.pk}/change/"
    data = form_data(admin_client_superuser.get(url))
    # When a superuser posts the form with another geometry (and another status)
    response = admin_client_superuser.post(url, {**data, "geometry": ELSEWHERE, "status": "INACTIVE"})
    # Then the admin accepts the form, but the boundary is exactly what the service stored
    assert response.status_code == 302
    stored = Boundary.objects.get(pk=boundary.pk)
    assert stored.geometry.equals_exact(boundary.geometry, 0) and stored.status == Boundary.Status.ACTIVE
    assert (stored.area_ha, stored.field_id) == (boundary.area_ha, boundary.field_id)
    assert api_client.get(f"/services/fields/api/users/{core_user.id}/fields/{field['id']}").json() == field


def test_the_field_change_form_cannot_change_its_boundaries(api_client, core_user, admin_client_superuser):
    field = create_field(api_client, core_user, square(0, 0))
    other = create_field(api_client, core_user, square(5, 5))
    url = f"/admin/fields/field/{field['id']}/change/"
    data = form_data(admin_client_superuser.get(url))
    assert data["boundaries-TOTAL_FORMS"] == 1
    # Change the inline boundary's geometry, point the field at another field's boundary, and rename it.
    response = admin_client_superuser.post(
        url,
        {**data, "boundaries-0-geometry": ELSEWHERE, "boundary": other["boundaries"][0], "name": "renamed"},
    )
    assert response.status_code == 302
    stored = Field.objects.select_related("boundary").get(pk=field["id"])
    assert stored.name == "renamed"  # the rest of the field stays editable
    assert str(stored.boundary_id) == field["boundaries"][0]
    body = api_client.get(f"/services/fields/api/users/{core_user.id}/fields/{field['id']}").json()
    assert body["geometry"] == field["geometry"] and body["boundaries"] == field["boundaries"]


def test_fields_farms_and_growers_are_not_added_nor_moved_to_another_core_user(
    api_client, owner, core_user, admin_client_superuser
):
    from tests.factories import CoreUserFactory

    for model in ("field", "farm", "grower", "fieldfile"):
        assert admin_client_superuser.get(f"/admin/fields/{model}/add/").status_code == 403, model
    field = create_field(api_client, core_user, square(0, 0))
    stranger = CoreUserFactory()
    url = f"/admin/fields/field/{field['id']}/change/"
    data = form_data(admin_client_superuser.get(url))
    response = admin_client_superuser.post(url, {**data, "core_user": stranger.pk, "type": "MERGED", "farm": ""})
    assert response.status_code == 302
    stored = Field.objects.get(pk=field["id"])
    assert (stored.core_user_id, stored.type) == (core_user.pk, Field.Type.ORIGINAL)
    assert api_client.get(f"/services/fields/api/users/{core_user.id}/fields/{field['id']}").status_code == 200
