import pytest

from configs.services import DEFAULTS, config_resolve
from tests.tenancy import assert_cross_tenant_404, assert_problem

URL = "/services/config/api/configs"
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def entries(body: dict) -> dict:
    return {k: v for k, v in body.items() if k not in ("apiOwnerUsername", "coreUserId")}


def test_owner_reads_the_supplement_defaults_without_fields_auto_merge(api_client, owner):
    body = api_client.get(URL).json()
    assert body["apiOwnerUsername"] == owner.username
    assert body["coreUserId"] == ""
    assert "fieldsAutoMerge" not in body
    assert body["operationsImageCreation"] is True
    assert body["geoimagesResolution"] == 0.00001
    assert (body["geoimagesShape"], body["geoimagesProjection"]) == ("SQUARE", "EPSG:3857")
    assert (body["fieldsMergeIntersection"], body["fieldsAttachIntersection"]) == (0.01, 0.01)
    assert body["fieldsAutoSync"] is True
    assert body["geoimagesColorRamp"]["nv"] == [0, 0, 0, 0]
    assert {"0%", "35%", "45%", "55%", "65%", "75%", "100%"} <= set(body["geoimagesColorRamp"])


def test_owner_patch_changes_only_what_is_sent_and_answers_with_fields_auto_merge(api_client):
    response = api_client.patch(URL, {"geoimagesShape": "HEXAGON", "fieldsAutoMerge": True}, format="json")
    assert response.status_code == 200
    body = response.json()
    assert body["geoimagesShape"] == "HEXAGON" and body["fieldsAutoMerge"] is True
    assert body["geoimagesProjection"] == "EPSG:3857"
    assert api_client.get(URL).json()["geoimagesShape"] == "HEXAGON"


def test_the_owner_configuration_cannot_be_deleted(api_client):
    assert_problem(api_client.delete(URL), 405, "methodNotAllowed")


def test_core_user_inherits_every_missing_entry_from_the_owner(api_client, core_user):
    api_client.patch(URL, {"fieldsAttachIntersection": 20.0}, format="json")
    created = api_client.post(f"{URL}/{core_user.id}", {"geoimagesShape": "HEXAGON"}, format="json")
    assert created.status_code == 201
    body = created.json()
    assert body["coreUserId"] == str(core_user.id)
    assert body["geoimagesShape"] == "HEXAGON"
    assert body["fieldsAttachIntersection"] == 20.0
    assert body["fieldsAutoMerge"] is False
    # A later change of the owner reaches entries the user does not override...
    api_client.patch(URL, {"fieldsAttachIntersection": 30.0, "geoimagesShape": "SQUARE"}, format="json")
    body = api_client.get(f"{URL}/{core_user.id}").json()
    assert body["fieldsAttachIntersection"] == 30.0
    # ...but not the ones it does.
    assert body["geoimagesShape"] == "HEXAGON"


def test_core_user_without_own_configuration_reads_the_owners(api_client, core_user):
    body = api_client.get(f"{URL}/{core_user.id}").json()
    assert entries(body) == DEFAULTS


def test_post_replaces_the_users_own_entries_and_patch_merges(api_client, core_user):
    api_client.post(f"{URL}/{core_user.id}", {"geoimagesShape": "HEXAGON", "fieldsAutoMerge": True}, format="json")
    replaced = api_client.post(f"{URL}/{core_user.id}", {"fieldsAutoMerge": True}, format="json")
    assert replaced.status_code == 200
    assert replaced.json()["geoimagesShape"] == "SQUARE"
    patched = api_client.patch(f"{URL}/{core_user.id}", {"geoimagesProjection": "EPSG:4326"}, format="json").json()
    assert patched["fieldsAutoMerge"] is True and patched["geoimagesProjection"] == "EPSG:4326"


def test_a_post_without_a_body_is_400_and_keeps_the_users_entries(api_client, core_user):
    """POST replaces the user's entries: no body at all (read as `{}` by DRF) dropped every one of them."""
    api_client.post(f"{URL}/{core_user.id}", {"geoimagesShape": "HEXAGON"}, format="json")
    response = api_client.generic("POST", f"{URL}/{core_user.id}", b"", content_type="application/json")
    assert "no body" in assert_problem(response, 400, "malformedRequest")["detail"]
    assert api_client.get(f"{URL}/{core_user.id}").json()["geoimagesShape"] == "HEXAGON"
    # PATCH changes what is sent: without a body, nothing
    assert api_client.generic("PATCH", f"{URL}/{core_user.id}", b"").json()["geoimagesShape"] == "HEXAGON"


def test_delete_returns_the_user_to_full_inheritance(api_client, core_user):
    api_client.post(f"{URL}/{core_user.id}", {"operationsImageCreation": False}, format="json")
    assert config_resolve(core_user=core_user)["operationsImageCreation"] is False
    assert api_client.delete(f"{URL}/{core_user.id}").status_code == 204
    api_client.patch(URL, {"geoimagesShape": "HEXAGON"}, format="json")
    body = api_client.get(f"{URL}/{core_user.id}").json()
    assert body["operationsImageCreation"] is True and body["geoimagesShape"] == "HEXAGON"


def test_a_core_users_configuration_stays_theirs(api_client, owner, core_user):
    """Neither the owner's configuration nor another core user's reads it; deleting it deletes only it."""
    from tests.factories import CoreUserFactory

    other = CoreUserFactory(owner=owner)
    assert api_client.post(f"{URL}/{core_user.id}", {"geoimagesShape": "HEXAGON"}, format="json").status_code == 201
    assert api_client.get(URL).json()["geoimagesShape"] == "SQUARE"
    assert api_client.get(f"{URL}/{other.id}").json()["geoimagesShape"] == "SQUARE"
    api_client.patch(URL, {"fieldsAutoSync": False}, format="json")
    api_client.post(f"{URL}/{other.id}", {"operationsImageCreation": False}, format="json")
    assert api_client.delete(f"{URL}/{core_user.id}").status_code == 204
    assert api_client.get(URL).json()["fieldsAutoSync"] is False
    assert api_client.get(f"{URL}/{other.id}").json()["operationsImageCreation"] is False
    assert api_client.get(f"{URL}/{core_user.id}").json()["geoimagesShape"] == "SQUARE"


def test_owner_patches_add_up(api_client):
    api_client.patch(URL, {"fieldsAutoSync": False}, format="json")
    api_client.patch(URL, {"geoimagesShape": "HEXAGON"}, format="json")
    body = api_client.get(URL).json()
    assert body["fieldsAutoSync"] is False and body["geoimagesShape"] == "HEXAGON"


def test_echoed_identity_keys_are_accepted(api_client, core_user):
    echoed = api_client.get(f"{URL}/{core_user.id}").json() | {"fieldsAutoSync": False}
    assert api_client.post(f"{URL}/{core_user.id}", echoed, format="json").json()["fieldsAutoSync"] is False


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"operationsImageCreation": "true"}, "operationsImageCreation"),
        # The echoed identity keys are ignored, but are texts as every GET answers them (a number was taken)
        ({"coreUserId": 12345}, "coreUserId"),
        ({"apiOwnerUsername": True}, "apiOwnerUsername"),
        ({"apiOwnerUsername": None}, "apiOwnerUsername"),
        ({"fieldsAutoMerge": 1}, "fieldsAutoMerge"),
        ({"fieldsMergeIntersection": 0}, "fieldsMergeIntersection"),
        ({"fieldsMergeIntersection": True}, "fieldsMergeIntersection"),
        ({"fieldsAttachIntersection": 100.5}, "fieldsAttachIntersection"),
        ({"fieldsAttachIntersection": "50"}, "fieldsAttachIntersection"),
        ({"geoimagesResolution": -1}, "geoimagesResolution"),
        ({"geoimagesResolution": 0}, "geoimagesResolution"),
        ({"geoimagesResolution": 2}, "geoimagesResolution"),
        ({"geoimagesShape": "TRIANGLE"}, "geoimagesShape"),
        ({"geoimagesProjection": "EPSG:999999"}, "geoimagesProjection"),
        ({"geoimagesProjection": "WGS84"}, "geoimagesProjection"),
        # Known to pyproj, but no map: heights only, earth-centred X/Y/Z, latitude/longitude/height, map + height
        ({"geoimagesProjection": "EPSG:5703"}, "geoimagesProjection"),
        ({"geoimagesProjection": "EPSG:4978"}, "geoimagesProjection"),
        ({"geoimagesProjection": "EPSG:4979"}, "geoimagesProjection"),
        ({"geoimagesProjection": "EPSG:7415"}, "geoimagesProjection"),
        ({"geoimagesColorRamp": {"0%": [0, 0, 0], "100%": [255, 255, 255]}}, "geoimagesColorRamp"),
        ({"geoimagesColorRamp": {"0%": [0, 0, 256], "100%": [0, 0, 0], "nv": [0, 0, 0, 0]}}, "geoimagesColorRamp.0%"),
        ({"geoimagesColorRamp": {"0%": [-5, 0, 0], "100%": [0, 0, 0], "nv": [0, 0, 0, 0]}}, "geoimagesColorRamp.0%"),
        ({"geoimagesColorRamp": {"0%": [0, 0, 0], "100%": [0, 0, 0], "nv": [0, 0, 0, -1]}}, "geoimagesColorRamp.nv"),
        ({"geoimagesColorRamp": {"0%": [0, 0, 0], "100%": [0, 0, 0], "nv": [0, 0, 0]}}, "geoimagesColorRamp.nv"),
        ({"geoimagesColorRamp": {"0%": [0, 0, 0], "nv": [0, 0, 0, 0]}}, "geoimagesColorRamp"),
        ({"geoimagesColorRamp": {"100%": [0, 0, 0], "nv": [0, 0, 0, 0]}}, "geoimagesColorRamp"),
        ({"geoimagesColorRamp": {"0%": [True, 0, 0], "100%": [0, 0, 0], "nv": [0, 0, 0, 0]}}, "geoimagesColorRamp.0%"),
        ({"geoimagesColorRamp": {"0%": [0, 0, 0], "100%": [0, 0, 0], "nv": [0, 0, 0, 0], "x": [1, 1, 1]}}, None),
        ({"geoimagesColorRamp": {"0%": [0, 0, 0.5], "100%": [0, 0, 0], "nv": [0, 0, 0, 0]}}, "geoimagesColorRamp.0%"),
        # Accepted once, these failed every image later: the renderer reads the same ramp.
        ({"geoimagesColorRamp": {"0%": [0, 0, 0], "100%": [0, 0, 0], "100.5%": [0, 0, 0], "nv": [0, 0, 0, 0]}}, None),
        (
            {
                "geoimagesColorRamp": {
                    "0%": [0, 0, 0],
                    "50%": [1, 1, 1],
                    "50.0%": [2, 2, 2],
                    "100%": [0, 0, 0],
                    "nv": [0, 0, 0, 0],
                }
            },
            "geoimagesColorRamp",
        ),
        ({"colour": "red"}, "colour"),
    ],
)
def test_every_entry_is_strictly_validated(api_client, core_user, body, field):
    for url, method in ((URL, "patch"), (f"{URL}/{core_user.id}", "post"), (f"{URL}/{core_user.id}", "patch")):
        problem = assert_problem(getattr(api_client, method)(url, body, format="json"), 400, "validation")
        if field:
            assert field in [e["field"] for e in problem["fieldErrors"]], problem
    # Nothing was written.
    assert entries(api_client.get(f"{URL}/{core_user.id}").json()) == DEFAULTS


def test_an_unknown_key_is_answered_with_the_bodys_other_errors(api_client, core_user):
    """The unknown key was answered alone; the client learned of the bad shape once it had removed it."""
    for method, url in (("patch", URL), ("post", f"{URL}/{core_user.id}")):
        body = {"geoimagesShape": "X", "zzz": 1, "fieldsAutoMerge": "yes"}
        problem = assert_problem(getattr(api_client, method)(url, body, format="json"), 400, "validation")
        assert sorted(e["field"] for e in problem["fieldErrors"]) == ["fieldsAutoMerge", "geoimagesShape", "zzz"]
    assert entries(api_client.get(f"{URL}/{core_user.id}").json()) == DEFAULTS


def test_a_ramp_has_at_most_one_stop_per_whole_percent(api_client):
    """50,000 stops were taken, and every listing of an image carried them all (10.9 MB for one file's images)."""
    every_percent = {f"{p}%": [p, p, p] for p in range(101)} | {"nv": [0, 0, 0, 0]}
    assert api_client.patch(URL, {"geoimagesColorRamp": every_percent}, format="json").status_code == 200
    one_more = every_percent | {"50.5%": [1, 1, 1]}
    problem = assert_problem(api_client.patch(URL, {"geoimagesColorRamp": one_more}, format="json"), 400)
    assert problem["fieldErrors"] == [{"field": "geoimagesColorRamp", "message": "At most 101 percentage stops."}]
    assert api_client.get(URL).json()["geoimagesColorRamp"] == every_percent


def test_a_ramp_end_written_otherwise_is_named_in_the_refusal(api_client):
    ramp = {"0.0%": [0, 0, 0], "100%": [9, 9, 9], "nv": [0, 0, 0, 0]}
    problem = assert_problem(api_client.patch(URL, {"geoimagesColorRamp": ramp}, format="json"), 400)
    assert problem["fieldErrors"][0]["message"] == (
        "Missing keys: 0% (the ends are written '0%' and '100%', not '0.0%')."
    )


def test_valid_custom_ramp_and_projection_are_kept(api_client):
    ramp = {"0%": [0, 0, 255], "50%": [0, 255, 0], "100%": [255, 0, 0], "nv": [10, 10, 10, 128]}
    body = api_client.patch(URL, {"geoimagesColorRamp": ramp, "geoimagesProjection": "EPSG:32632"}, format="json")
    assert body.status_code == 200
    assert body.json()["geoimagesColorRamp"] == ramp and body.json()["geoimagesProjection"] == "EPSG:32632"


def test_another_owner_cannot_read_change_or_delete_a_users_configuration(api_client, other_client, core_user):
    api_client.post(f"{URL}/{core_user.id}", {"geoimagesShape": "HEXAGON"}, format="json")
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{URL}/{core_user.id}",
        resource_id=core_user.id,
        updates=[("post", {"geoimagesShape": "SQUARE"}), ("patch", {"geoimagesShape": "SQUARE"})],
    )
    # The other owner's own configuration is untouched by the first owner's changes.
    api_client.patch(URL, {"fieldsAutoSync": False}, format="json")
    assert other_client.get(URL).json()["fieldsAutoSync"] is True


@pytest.mark.django_db(transaction=True)
def test_of_two_first_configurations_at_once_one_is_created_and_the_other_replaces_it(owner, core_user, make_client):
    from django.db import transaction

    from configs.models import Configuration
    from tests.concurrency import needs_postgresql, request_later, run_meanwhile

    needs_postgresql()
    url = f"{URL}/{core_user.id}"
    with transaction.atomic():
        assert make_client(owner).post(url, {"geoimagesShape": "HEXAGON"}, format="json").status_code == 201
        second = run_meanwhile(request_later(make_client, owner, "post", url, {"geoimagesShape": "SQUARE"}))
    assert second().status_code == 200  # was 201 too: it had looked before the first committed
    assert Configuration.objects.get(core_user=core_user).entries == {"geoimagesShape": "SQUARE"}


def test_the_owners_configuration_sent_back_as_read_stores_no_core_user_id(api_client, core_user):
    """`GET /configs` echoed into `PATCH /configs` (as clients do): its empty `coreUserId` is no entry of the owner's,
    and every core user's configuration still names its own user."""
    echoed = api_client.get(URL).json()
    assert api_client.patch(URL, echoed, format="json").status_code == 200
    assert api_client.get(f"{URL}/{core_user.id}").json()["coreUserId"] == str(core_user.id)
    from configs.models import Configuration

    assert all("coreUserId" not in config.entries for config in Configuration.objects.all())
