"""Boundaries: immutable history, the active boundary, PUT, and provider statuses through the service."""

import uuid

import pytest

from fields.geometry import from_geos, parse_multipolygon
from fields.models import Boundary, Field
from fields.services import boundary_provider_sync, field_create
from tests.concurrency import needs_postgresql, request_later, run_meanwhile, run_together
from tests.fields.helpers import create_field, field_url, provider_field, square
from tests.tenancy import assert_cross_tenant_404, assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def test_get_boundaries_and_the_active_boundary(api_client, core_user):
    field = create_field(api_client, core_user, square(10, 50))
    url = field_url(core_user, field["id"])
    boundaries = api_client.get(f"{url}/boundaries").json()
    assert [b["id"] for b in boundaries] == field["boundaries"]
    only = boundaries[0]
    assert only["status"] == "ACTIVE" and only["providerStatus"] is None
    assert only["geometry"] == square(10, 50) and only["area"] == field["area"]
    assert api_client.get(f"{url}/boundary").json() == only
    assert api_client.get(f"{url}/boundaries/{only['id']}").json() == only


def test_put_boundary_keeps_the_previous_one_inactive_and_unchanged(api_client, core_user):
    field = create_field(api_client, core_user, square(10, 50))
    url = field_url(core_user, field["id"])
    first = api_client.get(f"{url}/boundary").json()
    response = api_client.put(f"{url}/boundary", {"geometry": square(11, 50)}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["id"] == field["id"] and body["geometry"] == square(11, 50)
    assert body["boundaries"][0] == first["id"] and len(body["boundaries"]) == 2
    old = api_client.get(f"{url}/boundaries/{first['id']}").json()
    assert old == {**first, "status": "INACTIVE"}
    active = api_client.get(f"{url}/boundary").json()
    assert active["id"] == body["boundaries"][1] and active["status"] == "ACTIVE"
    assert [b["status"] for b in api_client.get(f"{url}/boundaries").json()] == ["INACTIVE", "ACTIVE"]


def test_the_same_outline_again_changes_nothing(
    transactional_db, owner, core_user, api_client, webhook_receiver, subscribe
):
    """The spec moves a boundary on "a new boundary geometry is sent": the same outline (also from another first
    vertex, or with an altitude) makes no boundary and sends no event; PATCH still applies its other changes."""
    field = create_field(api_client, core_user, square(10, 50))
    url = field_url(core_user, field["id"])
    subscribe(owner, webhook_receiver, ["fieldUpdated", "fieldBoundaryUpdated"])
    ring = square(10, 50)["coordinates"][0][0]
    rotated = {"type": "Polygon", "coordinates": [[*ring[2:-1], *ring[:3]]]}
    for method, body in [("put", square(10, 50)), ("put", rotated), ("patch", square(10, 50))]:
        again = getattr(api_client, method)(
            url if method == "patch" else f"{url}/boundary", {"geometry": body}, format="json"
        )
        assert again.status_code == 200 and again.json()["boundaries"] == field["boundaries"]
        assert again.json()["updatedTime"] == field["updatedTime"]
    renamed = api_client.patch(url, {"geometry": square(10, 50), "name": "renamed"}, format="json").json()
    assert renamed["name"] == "renamed" and renamed["boundaries"] == field["boundaries"]
    moved = api_client.put(f"{url}/boundary", {"geometry": square(11, 50)}, format="json").json()
    assert len(moved["boundaries"]) == 2
    webhook_receiver.wait_for(3)
    assert sorted(e["type"] for e in webhook_receiver.events()) == [
        "fieldBoundaryUpdated",
        "fieldUpdated",
        "fieldUpdated",
    ]


@pytest.mark.parametrize(
    "body",
    [{}, {"geometry": square(1, 1), "name": "x"}, {"geometry": {"type": "Polygon", "coordinates": [[[0, 0]]]}}],
)
def test_bad_put_boundary_is_400_and_creates_nothing(api_client, core_user, body):
    field = create_field(api_client, core_user)
    assert_problem(api_client.put(f"{field_url(core_user, field['id'])}/boundary", body, format="json"), 400)
    assert Boundary.objects.count() == 1


def test_boundaries_cannot_be_deleted_or_patched(api_client, core_user):
    field = create_field(api_client, core_user)
    url = f"{field_url(core_user, field['id'])}/boundaries/{field['boundaries'][0]}"
    assert_problem(api_client.delete(url), 405)
    assert_problem(api_client.patch(url, {"geometry": square(1, 1)}, format="json"), 405)
    assert_problem(api_client.delete(f"{field_url(core_user, field['id'])}/boundary"), 405)


def test_unknown_boundary_or_field_is_404(api_client, core_user):
    field = create_field(api_client, core_user)
    url = field_url(core_user, field["id"])
    assert_problem(api_client.get(f"{url}/boundaries/{uuid.uuid4()}"), 404, "notFound")
    assert_problem(api_client.get(f"{url}/boundaries/not-a-uuid"), 404, "notFound")
    assert_problem(api_client.get(f"{field_url(core_user, 'nope')}/boundaries"), 404, "notFound")
    assert_problem(
        api_client.put(f"{field_url(core_user, 'nope')}/boundary", {"geometry": square(1, 1)}, format="json"), 404
    )


def test_a_boundary_of_another_field_is_404(api_client, core_user):
    first = create_field(api_client, core_user)
    second = create_field(api_client, core_user, square(20, 20))
    url = f"{field_url(core_user, second['id'])}/boundaries/{first['boundaries'][0]}"
    assert_problem(api_client.get(url), 404, "notFound")


def test_a_field_of_another_core_user_of_the_owner_has_no_boundaries_here(api_client, owner, core_user):
    """The owner's other core user's field, named under this user's URL: the URL names nothing."""
    from tests.factories import CoreUserFactory

    other_user = CoreUserFactory(owner=owner)
    theirs = create_field(api_client, other_user, square(20, 20))
    url = field_url(core_user, theirs["id"])
    assert_problem(api_client.get(f"{url}/boundaries"), 404, "notFound")
    assert_problem(api_client.get(f"{url}/boundary"), 404, "notFound")
    assert_problem(api_client.get(f"{url}/boundaries/{theirs['boundaries'][0]}"), 404, "notFound")
    assert_problem(api_client.put(f"{url}/boundary", {"geometry": square(5, 5)}, format="json"), 404, "notFound")
    assert Boundary.objects.count() == 1


def test_boundaries_are_invisible_to_another_owner(api_client, other_client, core_user):
    field = create_field(api_client, core_user)
    url = field_url(core_user, field["id"])
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{url}/boundaries/{field['boundaries'][0]}",
        resource_id=field["boundaries"][0],
        delete=False,
        extra_urls=[
            ("get", f"{url}/boundaries", None),
            ("get", f"{url}/boundary", None),
            ("put", f"{url}/boundary", {"geometry": square(5, 5)}),
        ],
        core_user=core_user,
    )
    assert Boundary.objects.count() == 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("method", ["put", "patch"])
def test_concurrent_boundary_changes_leave_one_active_boundary(owner, core_user, make_client, method):
    needs_postgresql()
    field = create_field(make_client(owner), core_user, square(10, 50))
    url = field_url(core_user, field["id"]) + ("/boundary" if method == "put" else "")

    changes = [request_later(make_client, owner, method, url, {"geometry": square(11 + i, 50)}) for i in range(6)]
    results = run_together(*changes)
    assert [r.status_code for r in results] == [200] * 6
    boundaries = make_client(owner).get(f"{field_url(core_user, field['id'])}/boundaries").json()
    assert len(boundaries) == 7
    assert [b["status"] for b in boundaries].count("ACTIVE") == 1
    active = make_client(owner).get(f"{field_url(core_user, field['id'])}/boundary").json()
    assert active["status"] == "ACTIVE" and active["id"] == boundaries[-1]["id"]


# --- provider statuses (the service provider sync calls) -----------------------------------------


def statuses(field):
    return [(b.status, b.provider_status) for b in Boundary.objects.filter(field=field).order_by("created_at", "id")]


def test_provider_edit_outdates_the_boundary_and_creates_a_new_active_one(core_user):
    field = provider_field(core_user)
    old = field.boundary
    new = boundary_provider_sync(field=field, provider_boundary_id="pb", geometry=parse_multipolygon(square(2, 2)))
    assert statuses(field) == [("OUTDATED_ON_PROVIDER", "ACTIVE"), ("ACTIVE", "ACTIVE")]
    field.refresh_from_db()
    assert field.boundary_id == new.pk != old.pk
    old.refresh_from_db()
    # The old boundary keeps its geometry; the new one has the provider's.
    assert from_geos(old.geometry).equals(parse_multipolygon(square(1, 1)))
    assert from_geos(new.geometry).equals(parse_multipolygon(square(2, 2)))


def test_provider_status_change_keeps_history_in_a_new_boundary(core_user):
    field = provider_field(core_user)
    new = boundary_provider_sync(field=field, provider_boundary_id="pb", provider_status="INACTIVE")
    assert statuses(field) == [("INACTIVE", "ACTIVE"), ("INACTIVE", "INACTIVE")]
    first = Boundary.objects.filter(field=field).first()
    assert new.pk != first.pk and new.geometry.equals(first.geometry) and new.area_ha == first.area_ha
    # Back to active at the provider: a third boundary, active again.
    boundary_provider_sync(field=field, provider_boundary_id="pb", provider_status="ACTIVE")
    assert statuses(field)[-1] == ("ACTIVE", "ACTIVE")
    # Nothing changed: nothing new.
    assert boundary_provider_sync(field=field, provider_boundary_id="pb", provider_status="ACTIVE") is None
    assert len(statuses(field)) == 3


def test_provider_deletion_marks_the_boundary_deleted_on_provider(api_client, core_user):
    field = provider_field(core_user)
    assert boundary_provider_sync(field=field, provider_boundary_id="pb", deleted=True) is None
    assert statuses(field) == [("DELETED_ON_PROVIDER", "ACTIVE")]
    body = api_client.get(field_url(core_user, field.pk)).json()
    assert body["geometry"] is None and body["area"] is None and len(body["boundaries"]) == 1
    # Nor does it name the provider's boundary any more
    assert body["providerBoundaryId"] is None
    assert_problem(api_client.get(f"{field_url(core_user, field.pk)}/boundary"), 404)
    # A new boundary from the provider is named again
    boundary_provider_sync(field=field, provider_boundary_id="pb2", geometry=parse_multipolygon(square(3, 3)))
    assert api_client.get(field_url(core_user, field.pk)).json()["providerBoundaryId"] == "pb2"


def test_deleting_another_provider_boundary_keeps_the_current_one(api_client, core_user):
    field = provider_field(core_user)
    boundary_provider_sync(field=field, provider_boundary_id="pb2", geometry=parse_multipolygon(square(3, 3)))
    boundary_provider_sync(field=field, provider_boundary_id="pb", deleted=True)
    body = api_client.get(field_url(core_user, field.pk)).json()
    assert body["providerBoundaryId"] == "pb2" and body["geometry"] is not None


def test_a_new_provider_boundary_id_becomes_the_current_boundary(core_user):
    field = provider_field(core_user)
    boundary_provider_sync(field=field, provider_boundary_id="pb2", geometry=parse_multipolygon(square(3, 3)))
    assert statuses(field) == [("INACTIVE", "ACTIVE"), ("ACTIVE", "ACTIVE")]
    assert Field.objects.get(pk=field.pk).provider_boundary_id == "pb2"


def test_provider_sync_rejects_an_unknown_status(core_user):
    field = provider_field(core_user)
    with pytest.raises(ValueError):
        boundary_provider_sync(field=field, provider_boundary_id="pb", provider_status="GONE")


@pytest.mark.django_db
def test_a_change_of_a_field_deleted_meanwhile_is_not_found_and_writes_nothing(core_user):
    from fields.services import field_boundary_set, field_update
    from platform_site.api.errors import NotFoundError

    field = field_create(core_user=core_user, geometry=parse_multipolygon(square(10, 50)))
    Field.objects.filter(pk=field.pk).delete()  # another request's DELETE, after this one loaded the field
    with pytest.raises(NotFoundError):
        field_boundary_set(field=field, geometry=parse_multipolygon(square(11, 50)))
    with pytest.raises(NotFoundError):
        field_update(field=field, changes={"name": "late"})
    assert not Boundary.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_boundary_change_racing_a_deletion_is_200_or_404(owner, core_user, make_client):
    needs_postgresql()
    for round in range(5):
        url = field_url(core_user, create_field(make_client(owner), core_user, square(10, 50))["id"])
        put, delete = run_together(
            request_later(make_client, owner, "put", f"{url}/boundary", {"geometry": square(11, 50)}),
            request_later(make_client, owner, "delete", url),
        )
        assert delete.status_code == 204 and put.status_code in (200, 404), (round, put.content)
        assert not Boundary.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_deletion_arriving_while_a_name_and_geometry_change_is_under_way_waits_and_deletes(
    owner, core_user, make_client
):
    """The change writes the field's row twice (name, then the new boundary), so PostgreSQL checks its core user at
    commit; that check waited for the deletion, which had locked the user and was waiting for the field: a deadlock,
    the DELETE a 500."""
    from django.db import transaction

    needs_postgresql()
    client = make_client(owner)
    url = field_url(core_user, create_field(client, core_user, square(10, 50))["id"])
    with transaction.atomic():
        assert client.patch(url, {"name": "Renamed", "geometry": square(11, 50)}, format="json").status_code == 200
        delete = run_meanwhile(request_later(make_client, owner, "delete", url))
    assert delete().status_code == 204
    assert not Field.objects.exists() and not Boundary.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_field_is_deleted_while_another_change_of_its_user_is_under_way(owner, core_user, make_client):
    """A field's deletion locked its core user FOR UPDATE, which waits for every change that keeps the user: under
    a stream of changes of the user's other fields it never came (30 s and counting, 1,366 renames meanwhile)."""
    from django.db import transaction

    from platform_site.accounts.services import core_user_keep

    needs_postgresql()
    client = make_client(owner)
    doomed = field_url(core_user, create_field(client, core_user, square(10, 50))["id"])
    with transaction.atomic():
        core_user_keep(core_user.pk)  # a change of another field of the user, under way
        delete = run_meanwhile(request_later(make_client, owner, "delete", doomed))
        assert not Field.objects.exists()  # deleted before the other change ends
    assert delete().status_code == 204


@pytest.mark.django_db(transaction=True)
def test_a_field_is_renamed_while_a_file_of_its_user_is_being_completed(owner, core_user, make_client):
    """A field change keeps its core user from deletion; completing a file locked the user FOR UPDATE, so the
    rename waited for the whole of the file's processing."""
    from django.db import transaction

    from conversion import outputs
    from conversion import services as conversion
    from conversion.models import File, FileOrigin
    from tests.operations.helpers import grid_table

    needs_postgresql()
    url = field_url(core_user, create_field(make_client(owner), core_user, square(10, 50))["id"])
    file = File.objects.create(
        core_user=core_user, file_name="upload.zip", file_format="TEST", provider="Other", origin=FileOrigin.UPLOADED
    )
    produced = outputs.produce(file, grid_table(), clean=False)
    with transaction.atomic():
        conversion.file_complete(file, produced)  # held open: the rest of the file's processing
        rename = run_meanwhile(request_later(make_client, owner, "patch", url, {"name": "Renamed"}))
        assert Field.objects.get().name == "Renamed"  # done before the file's transaction ends
    assert rename().status_code == 200
