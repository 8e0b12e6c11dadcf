"""Auto-merge per the inherited configuration, and the events of fields."""

import time

import pytest
from shapely.geometry import shape

from configs.services import config_owner_update, config_user_set
from fields.models import Field
from fields.services import boundary_provider_sync
from tests.concurrency import needs_postgresql, request_later, run_together
from tests.fields.helpers import BASE, create_field, field_url, fields_url, provider_field, rect, square
from tests.tenancy import assert_problem

pytestmark = [pytest.mark.embedded]

A = rect(0, 0, 0.02, 0.02)
B = rect(0.01, 0, 0.03, 0.02)  # overlaps A by half of each


def merged_of(api_client, core_user, field_id):
    body = api_client.get(field_url(core_user, field_id)).json()
    return body.get("mergedFieldId")


@pytest.mark.django_db
def test_no_merge_by_default(api_client, core_user):
    a = create_field(api_client, core_user, A)
    b = create_field(api_client, core_user, B)
    assert "mergedFieldId" not in b and merged_of(api_client, core_user, a["id"]) is None
    assert Field.objects.filter(type="MERGED").count() == 0


@pytest.mark.django_db
def test_overlapping_fields_merge_when_the_owner_turns_it_on(api_client, core_user, owner):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(api_client, core_user, A)
    far = create_field(api_client, core_user, square(5, 5))
    b = create_field(api_client, core_user, B)
    merged_id = b["mergedFieldId"]
    assert merged_of(api_client, core_user, a["id"]) == merged_id
    assert merged_of(api_client, core_user, far["id"]) is None
    merged = api_client.get(field_url(core_user, merged_id)).json()
    assert merged["type"] == "MERGED" and merged["sources"] == sorted([a["id"], b["id"]])
    assert "mergedFieldId" not in merged
    assert shape(merged["geometry"]).equals(shape(rect(0, 0, 0.03, 0.02)))
    assert merged["area"]["value"] == pytest.approx(1.5 * a["area"]["value"], rel=1e-3)
    listed = api_client.get(f"{BASE}/fields", {"type": "MERGED"}).json()
    assert [f["id"] for f in listed] == [merged_id]
    # A third overlapping field joins the same merged field.
    c = create_field(api_client, core_user, rect(0.025, 0, 0.04, 0.02))
    assert c["mergedFieldId"] == merged_id
    merged = api_client.get(field_url(core_user, merged_id)).json()
    assert len(merged["sources"]) == 3 and len(merged["boundaries"]) == 2
    assert shape(merged["geometry"]).equals(shape(rect(0, 0, 0.04, 0.02)))


@pytest.mark.django_db
@pytest.mark.parametrize("change", [{"provider_status": "INACTIVE"}, {"deleted": True}])
def test_a_field_without_an_active_outline_merges_with_nothing(api_client, core_user, owner, change):
    """Made inactive on its provider, its current boundary is INACTIVE; deleted there, it has none."""
    gone = provider_field(core_user, A)
    boundary_provider_sync(field=gone, provider_boundary_id="pb", **change)
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    b = create_field(api_client, core_user, B)
    assert "mergedFieldId" not in b and merged_of(api_client, core_user, gone.public_id) is None
    assert not Field.objects.filter(type="MERGED").exists()


@pytest.mark.django_db
def test_fields_sharing_only_an_edge_never_merge_however_small_the_threshold(api_client, core_user, owner):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True, "fieldsMergeIntersection": 1e-9})
    create_field(api_client, core_user, rect(0, 0, 0.01, 0.01))
    beside = create_field(api_client, core_user, rect(0.01, 0, 0.02, 0.01))
    assert "mergedFieldId" not in beside and not Field.objects.filter(type="MERGED").exists()


@pytest.mark.django_db
def test_the_core_users_own_configuration_wins(api_client, core_user, owner):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    config_user_set(core_user=core_user, entries={"fieldsAutoMerge": False}, replace=True)
    create_field(api_client, core_user, A)
    assert "mergedFieldId" not in create_field(api_client, core_user, B)


@pytest.mark.django_db
def test_the_merge_threshold_is_inherited(api_client, core_user, owner):
    # A and B overlap by 50 % of each: a 60 % threshold keeps them apart, 50 % merges them.
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True, "fieldsMergeIntersection": 60.0})
    create_field(api_client, core_user, A)
    assert "mergedFieldId" not in create_field(api_client, core_user, B)
    config_user_set(core_user=core_user, entries={"fieldsMergeIntersection": 50.0}, replace=True)
    assert "mergedFieldId" in create_field(api_client, core_user, rect(0.01, 0, 0.03, 0.02))


@pytest.mark.django_db
def test_an_update_of_a_source_updates_the_merged_field(api_client, core_user, owner):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(api_client, core_user, A)
    merged_id = create_field(api_client, core_user, B)["mergedFieldId"]
    api_client.put(f"{field_url(core_user, a['id'])}/boundary", {"geometry": rect(-0.01, 0, 0.02, 0.02)}, format="json")
    merged = api_client.get(field_url(core_user, merged_id)).json()
    assert shape(merged["geometry"]).equals(shape(rect(-0.01, 0, 0.03, 0.02)))
    assert len(merged["boundaries"]) == 2
    # The merged field's geometry is derived, not settable.
    response = api_client.put(f"{field_url(core_user, merged_id)}/boundary", {"geometry": A}, format="json")
    assert response.status_code == 400 and response.json()["errorKey"] == "mergedFieldGeometry"


@pytest.mark.django_db
def test_deleting_sources_shrinks_then_removes_the_merged_field(api_client, core_user, owner):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(api_client, core_user, A)
    b = create_field(api_client, core_user, B)
    merged_id = b["mergedFieldId"]
    api_client.delete(field_url(core_user, b["id"]))
    assert not Field.objects.filter(pk=merged_id).exists()
    assert merged_of(api_client, core_user, a["id"]) is None


@pytest.mark.django_db
@pytest.mark.parametrize("deleted", ["merged", "other source"])
def test_a_source_freed_by_the_deletion_of_its_merged_field_is_updated(api_client, core_user, owner, deleted):
    """It no longer has `mergedFieldId`: it changed, so its `updatedTime` moves (a client syncing on it would
    otherwise never learn that it left the merge)."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(api_client, core_user, A)
    b = create_field(api_client, core_user, B)
    merged_id = b["mergedFieldId"]
    before = api_client.get(field_url(core_user, a["id"])).json()
    assert before["mergedFieldId"] == merged_id
    time.sleep(0.002)  # times are in milliseconds

    response = api_client.delete(field_url(core_user, merged_id if deleted == "merged" else b["id"]))

    assert response.status_code == 204 and not Field.objects.filter(pk=merged_id).exists()
    after = api_client.get(field_url(core_user, a["id"])).json()
    assert "mergedFieldId" not in after and after["updatedTime"] > before["updatedTime"]
    if deleted == "merged":
        freed = api_client.get(field_url(core_user, b["id"])).json()
        assert "mergedFieldId" not in freed and freed["updatedTime"] > b["updatedTime"]


def test_a_field_that_joins_or_leaves_a_merged_field_is_announced_updated(
    transactional_db, owner, core_user, api_client, webhook_receiver, subscribe
):
    """Its `mergedFieldId` changes and its `updatedTime` moves: a client syncing on fieldUpdated must hear of it.
    The field whose own change merged them has its own events (fieldCreated here)."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    subscribe(owner, webhook_receiver, ["fieldUpdated"])
    a = create_field(api_client, core_user, A)
    b = create_field(api_client, core_user, B)  # A joins the new merged field with it
    c = create_field(api_client, core_user, rect(0.1, 0, 0.12, 0.02))
    d = create_field(api_client, core_user, rect(0.11, 0, 0.13, 0.02))  # C joins a second merged field with it
    webhook_receiver.wait_for(3, timeout=1)
    assert sorted(e["fieldId"] for e in webhook_receiver.events()) == sorted([a["id"], c["id"]])
    # A field across both: the second merged field is absorbed into the first, C and D move to it
    bridge = create_field(api_client, core_user, rect(0.02, 0, 0.11, 0.02))
    assert api_client.get(field_url(core_user, d["id"])).json()["mergedFieldId"] == b["mergedFieldId"]
    webhook_receiver.wait_for(5, timeout=1)
    assert sorted(e["fieldId"] for e in webhook_receiver.events()[2:]) == sorted([c["id"], d["id"]])
    # The merged field is deleted: its five sources leave it
    api_client.delete(field_url(core_user, b["mergedFieldId"]))
    webhook_receiver.wait_for(10, timeout=2)
    assert sorted(e["fieldId"] for e in webhook_receiver.events()[4:]) == sorted(
        [a["id"], b["id"], c["id"], d["id"], bridge["id"]]
    )


def test_a_field_joining_or_leaving_without_changing_the_union_updates_the_merged_field(
    transactional_db, owner, core_user, api_client, webhook_receiver, subscribe
):
    """A field inside the merged outline joins it: the union is the same, the sources are not. Its `updatedTime`
    moves and mergedFieldUpdated says so (with the current boundary); the same when that field is deleted."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(api_client, core_user, A)
    b = create_field(api_client, core_user, B)
    merged_id = b["mergedFieldId"]
    before = api_client.get(field_url(core_user, merged_id)).json()
    subscribe(owner, webhook_receiver, ["mergedFieldCreated", "mergedFieldUpdated"])

    inside = create_field(api_client, core_user, rect(0.005, 0.005, 0.008, 0.008))
    joined = api_client.get(field_url(core_user, merged_id)).json()
    assert inside["mergedFieldId"] == merged_id
    assert joined["sources"] == sorted([a["id"], b["id"], inside["id"]])
    assert joined["boundaries"] == before["boundaries"] and joined["updatedTime"] > before["updatedTime"]
    api_client.delete(field_url(core_user, inside["id"]))
    left = api_client.get(field_url(core_user, merged_id)).json()
    assert left["sources"] == sorted([a["id"], b["id"]]) and left["updatedTime"] > joined["updatedTime"]

    webhook_receiver.wait_for(2)
    events = [(e["type"], e["fieldId"], e["boundaryId"], e["sources"]) for e in webhook_receiver.events()]
    assert events == [
        ("mergedFieldUpdated", merged_id, before["boundaries"][-1], joined["sources"]),
        ("mergedFieldUpdated", merged_id, before["boundaries"][-1], left["sources"]),
    ]


@pytest.mark.parametrize("how", ["deleted on the provider", "inactive on the provider"])
def test_a_merged_field_has_no_outline_while_none_of_its_sources_has_one(
    transactional_db, owner, core_user, api_client, webhook_receiver, subscribe, how
):
    """It kept the union of the last source to lose its outline, ACTIVE: its geometry and area were still answered,
    and intersects still found it."""
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    first = provider_field(core_user, A, provider_field_id="p1")
    second = provider_field(core_user, B, provider_field_id="p2")
    merged = Field.objects.get(type=Field.Type.MERGED)
    subscribe(owner, webhook_receiver, ["mergedFieldUpdated"])

    def lose(field):
        if how == "deleted on the provider":
            boundary_provider_sync(field=field, provider_boundary_id="pb", deleted=True)
        else:
            boundary_provider_sync(field=field, provider_boundary_id="pb", provider_status="INACTIVE")

    lose(first)
    body = api_client.get(field_url(core_user, merged.pk)).json()
    assert shape(body["geometry"]).equals(shape(B))
    last_outline = body["boundaries"][-1]
    lose(second)
    body = api_client.get(field_url(core_user, merged.pk)).json()
    assert body["geometry"] is None and body["area"] is None
    assert body["sources"] == sorted([first.pk, second.pk]) and body["boundaries"][-1] == last_outline
    assert api_client.get(f"{field_url(core_user, merged.pk)}/boundaries/{last_outline}").json()["status"] == "INACTIVE"
    assert_problem(api_client.get(f"{field_url(core_user, merged.pk)}/boundary"), 404)
    found = api_client.post(f"{fields_url(core_user)}/intersects", {"geometry": A}, format="json").json()
    assert found == []

    # One source has an outline again: so has the merged field, a new ACTIVE one.
    if how == "deleted on the provider":
        boundary_provider_sync(field=second, provider_boundary_id="pb2", geometry=shape(B))
    else:
        boundary_provider_sync(field=second, provider_boundary_id="pb", provider_status="ACTIVE")
    body = api_client.get(field_url(core_user, merged.pk)).json()
    assert shape(body["geometry"]).equals(shape(B)) and body["boundaries"][-1] != last_outline
    found = api_client.post(f"{fields_url(core_user)}/intersects", {"geometry": A}, format="json").json()
    assert sorted(f["id"] for f in found) == sorted([merged.pk, second.pk])

    webhook_receiver.wait_for(3)
    events = [(e["type"], e["boundaryId"]) for e in webhook_receiver.events()]
    assert events == [
        ("mergedFieldUpdated", last_outline),  # the union of the second source alone
        ("mergedFieldUpdated", last_outline),  # that outline now INACTIVE: none
        ("mergedFieldUpdated", body["boundaries"][-1]),
    ]


def test_a_source_joining_a_merged_field_has_a_new_updated_time(api_client, core_user, owner):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(api_client, core_user, A)
    create_field(api_client, core_user, B)
    joined = api_client.get(field_url(core_user, a["id"])).json()
    assert joined["mergedFieldId"] and joined["updatedTime"] > a["updatedTime"]


# --- events ---------------------------------------------------------------------------------------

FIELD_EVENTS = [
    "fieldCreated",
    "fieldUpdated",
    "fieldBoundaryCreated",
    "fieldBoundaryUpdated",
    "mergedFieldCreated",
    "mergedFieldUpdated",
]


def test_field_events_are_delivered(transactional_db, owner, core_user, api_client, webhook_receiver, subscribe):
    subscribe(owner, webhook_receiver, FIELD_EVENTS)
    field = create_field(api_client, core_user, A)
    boundary = field["boundaries"][0]
    api_client.patch(field_url(core_user, field["id"]), {"name": "renamed"}, format="json")
    updated = api_client.put(f"{field_url(core_user, field['id'])}/boundary", {"geometry": B}, format="json").json()
    webhook_receiver.wait_for(5)
    events = [(e["type"], e.get("fieldId"), e.get("boundaryId")) for e in webhook_receiver.events()]
    assert sorted(events) == sorted(
        [
            ("fieldCreated", field["id"], None),
            ("fieldBoundaryCreated", field["id"], boundary),
            ("fieldUpdated", field["id"], None),
            ("fieldBoundaryUpdated", field["id"], updated["boundaries"][1]),
            ("fieldUpdated", field["id"], None),
        ]
    )
    assert all(e["coreUserId"] == str(core_user.id) for e in webhook_receiver.events())


def test_merge_events_are_delivered(transactional_db, owner, core_user, api_client, webhook_receiver, subscribe):
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    subscribe(owner, webhook_receiver, ["mergedFieldCreated", "mergedFieldUpdated"])
    a = create_field(api_client, core_user, A)
    b = create_field(api_client, core_user, B)
    api_client.put(f"{field_url(core_user, a['id'])}/boundary", {"geometry": rect(-0.01, 0, 0.02, 0.02)}, format="json")
    webhook_receiver.wait_for(2)
    events = webhook_receiver.events()
    assert [e["type"] for e in events] == ["mergedFieldCreated", "mergedFieldUpdated"]
    assert events[0]["fieldId"] == b["mergedFieldId"] and events[0]["sources"] == sorted([a["id"], b["id"]])


def test_rejected_changes_emit_nothing(transactional_db, owner, core_user, api_client, webhook_receiver, subscribe):
    subscribe(owner, webhook_receiver, FIELD_EVENTS)
    bad = {"geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}}
    assert api_client.post(f"{BASE}/users/{core_user.id}/fields", bad, format="json").status_code == 400
    create_field(api_client, core_user, A, id="dup")
    assert (
        api_client.post(f"{BASE}/users/{core_user.id}/fields", {"id": "dup", "geometry": A}, format="json").status_code
        == 409
    )
    webhook_receiver.wait_for(2)
    assert sorted(e["type"] for e in webhook_receiver.events()) == ["fieldBoundaryCreated", "fieldCreated"]


def test_a_patch_that_changes_nothing_emits_nothing(
    transactional_db, owner, core_user, api_client, webhook_receiver, subscribe
):
    """The name, farm and outline the field already has, sent again: no fieldUpdated, and updatedTime stays."""
    subscribe(owner, webhook_receiver, FIELD_EVENTS)
    farm = api_client.post(f"{BASE}/users/{core_user.id}/farms", {"name": "Home"}, format="json").json()
    field = create_field(api_client, core_user, A, name="North", farmId=farm["id"])
    url = field_url(core_user, field["id"])
    for body in ({"name": "North"}, {"farmId": farm["id"]}, {"name": "North", "farmId": farm["id"], "geometry": A}):
        again = api_client.patch(url, body, format="json")
        assert again.status_code == 200 and again.json() == field
    api_client.patch(url, {"name": "South"}, format="json")  # a real change, last
    webhook_receiver.wait_for(4, timeout=1)  # (three are due: a fourth would be a no-op's)
    assert sorted(e["type"] for e in webhook_receiver.events()) == [
        "fieldBoundaryCreated",
        "fieldCreated",
        "fieldUpdated",
    ]


@pytest.mark.django_db(transaction=True)
def test_concurrent_changes_of_two_sources_both_reach_the_merged_field(owner, core_user, make_client):
    needs_postgresql()
    client = make_client(owner)
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a = create_field(client, core_user, A)
    b = create_field(client, core_user, B)
    merged_id = b["mergedFieldId"]
    # Merging off: a source change then only refreshes the merged field (no core-user lock on that path).
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": False})

    def put(field_id, geometry):
        return request_later(
            make_client, owner, "put", f"{field_url(core_user, field_id)}/boundary", {"geometry": geometry}
        )

    for round in range(1, 6):
        results = run_together(
            put(a["id"], rect(-0.001 * round, 0, 0.02, 0.02)), put(b["id"], rect(0.01, 0, 0.03 + 0.001 * round, 0.02))
        )
        assert [r.status_code for r in results] == [200, 200]
        merged = client.get(field_url(core_user, merged_id)).json()
        expected = rect(-0.001 * round, 0, 0.03 + 0.001 * round, 0.02)
        assert shape(merged["geometry"]).equals(shape(expected)), round
        statuses = [x["status"] for x in client.get(f"{field_url(core_user, merged_id)}/boundaries").json()]
        assert statuses.count("ACTIVE") == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_deletions_of_sources_leave_no_merged_field_of_one_source(owner, core_user, make_client):
    needs_postgresql()
    client = make_client(owner)
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    for round in range(3):
        a, b = create_field(client, core_user, A), create_field(client, core_user, B)
        c = create_field(client, core_user, rect(0.025, 0, 0.04, 0.02))
        merged_id = c["mergedFieldId"]
        results = run_together(
            *[request_later(make_client, owner, "delete", field_url(core_user, x["id"])) for x in (a, b)]
        )
        assert [r.status_code for r in results] == [204, 204]
        assert client.get(field_url(core_user, merged_id)).status_code == 404, round
        assert "mergedFieldId" not in client.get(field_url(core_user, c["id"])).json()
        client.delete(field_url(core_user, c["id"]))


@pytest.mark.django_db(transaction=True)
def test_concurrent_changes_of_overlapping_fields_with_auto_merge_all_succeed(owner, core_user, make_client):
    needs_postgresql()
    client = make_client(owner)
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    a, b = create_field(client, core_user, A), create_field(client, core_user, B)
    merged_id = b["mergedFieldId"]

    def put(field_id, geometry):
        return request_later(
            make_client, owner, "put", f"{field_url(core_user, field_id)}/boundary", {"geometry": geometry}
        )

    def create(geometry):
        return request_later(make_client, owner, "post", f"{BASE}/users/{core_user.id}/fields", {"geometry": geometry})

    for round in range(1, 4):
        west, east = rect(-0.001 * round, 0, 0.02, 0.02), rect(0.01, 0, 0.03 + 0.001 * round, 0.02)
        results = run_together(put(a["id"], west), put(b["id"], east), create(rect(0.015, 0.01, 0.02, 0.03)))
        assert [r.status_code for r in results] == [200, 200, 201], [r.content[:200] for r in results]
        merged = client.get(field_url(core_user, merged_id)).json()
        assert shape(merged["geometry"]).contains(shape(west).union(shape(east))), round


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("auto_merge", [True, False])
def test_deleting_a_merged_field_while_a_source_changes_succeeds(owner, core_user, make_client, auto_merge):
    needs_postgresql()
    client = make_client(owner)
    for round in range(1, 4):
        config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
        a, b = create_field(client, core_user, A), create_field(client, core_user, B)
        merged_id = b["mergedFieldId"]
        config_owner_update(owner=owner, entries={"fieldsAutoMerge": auto_merge})
        put_url, merged_url = f"{field_url(core_user, a['id'])}/boundary", field_url(core_user, merged_id)
        geometry = rect(-0.001 * round, 0, 0.02, 0.02)
        put, delete = run_together(
            request_later(make_client, owner, "put", put_url, {"geometry": geometry}),
            request_later(make_client, owner, "delete", merged_url),
        )
        assert (put.status_code, delete.status_code) == (200, 204), (round, put.content[:300])
        for source in (a, b):
            client.delete(field_url(core_user, source["id"]))
        for leftover in Field.objects.filter(core_user=core_user):
            client.delete(field_url(core_user, leftover.pk))


@pytest.mark.django_db(transaction=True)
def test_auto_merge_switched_on_during_a_boundary_change_while_the_field_is_renamed(
    owner, core_user, make_client, monkeypatch
):
    """The change read the configuration (off) when it began, and again before merging (on): it upgraded its lock
    of the core user while the rename, which kept the user, waited for the field: a deadlock, the rename a 500."""
    from django.db import transaction

    from fields.geometry import parse_multipolygon
    from fields.services import writes
    from tests.concurrency import run_meanwhile

    needs_postgresql()
    field_id = create_field(make_client(owner), core_user, square(10, 50))["id"]
    url, rename, merge = field_url(core_user, field_id), {}, writes.after_boundary_change

    def meanwhile(field):  # a rename of the field comes, and the owner switches auto-merge on
        rename["answer"] = run_meanwhile(request_later(make_client, owner, "patch", url, {"name": "Renamed"}))
        run_meanwhile(lambda: config_owner_update(owner=owner, entries={"fieldsAutoMerge": True}))()
        return merge(field)

    monkeypatch.setattr(writes, "after_boundary_change", meanwhile)
    with transaction.atomic():
        writes.field_boundary_set(
            field=Field.objects.get(public_id=field_id), geometry=parse_multipolygon(square(11, 50))
        )
    assert rename["answer"]().status_code == 200
    assert Field.objects.get(public_id=field_id).name == "Renamed"


@pytest.mark.django_db(transaction=True)
def test_a_boundary_change_with_auto_merge_on_goes_ahead_of_changes_that_only_keep_the_user(
    owner, core_user, make_client
):
    """With auto-merge on, a boundary change locked its core user FOR UPDATE, which waits for every change that keeps
    the user: under a stream of renames of the user's other fields it never came (20 s, 831 renames meanwhile)."""
    from django.db import transaction

    from platform_site.accounts.services import core_user_keep
    from tests.concurrency import run_meanwhile

    needs_postgresql()
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    client = make_client(owner)
    url = f"{field_url(core_user, create_field(client, core_user, square(10, 50))['id'])}/boundary"
    with transaction.atomic():
        core_user_keep(core_user.pk)  # a rename of another field of the user, under way
        put = run_meanwhile(request_later(make_client, owner, "put", url, {"geometry": square(11, 50)}))
        assert Field.objects.get().boundaries.count() == 2  # done before the rename ends
    assert put().status_code == 200


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("first", "then", "name", "announced"),
    [("B", "B", "B", 1), ("C", "A", "A", 2)],
    ids=["the same rename twice", "a rename back to the name the second request read"],
)
def test_a_rename_is_judged_against_the_field_as_it_is_once_locked(
    owner, core_user, make_client, webhook_receiver, subscribe, first, then, name, announced
):
    """The rename compared the copy the view had read before the lock: the same rename twice at once was announced
    twice, and a rename back to the name that copy held ('A', after 'C' committed) was dropped as no change."""
    from django.db import transaction

    from tests.concurrency import run_meanwhile

    needs_postgresql()
    client = make_client(owner)
    field = client.post(f"{BASE}/users/{core_user.id}/fields", {"name": "A", "geometry": A}, format="json").json()
    subscribe(owner, webhook_receiver, ["fieldUpdated"])
    url = field_url(core_user, field["id"])
    with transaction.atomic():
        assert client.patch(url, {"name": first}, format="json").status_code == 200
        second = run_meanwhile(request_later(make_client, owner, "patch", url, {"name": then}))
    answer = second()
    assert answer.status_code == 200 and answer.json()["name"] == name
    assert Field.objects.get(public_id=field["id"]).name == name
    webhook_receiver.wait_for(announced + 1, timeout=2)  # (one more than expected: any extra arrives meanwhile)
    assert [e["type"] for e in webhook_receiver.events()] == ["fieldUpdated"] * announced
