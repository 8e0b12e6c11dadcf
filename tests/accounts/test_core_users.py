import uuid

import pytest

from tests.factories import CoreUserFactory
from tests.tenancy import assert_cross_tenant_404, assert_problem

URL = "/services/usermanagement/api/users"
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def test_create_get_and_delete_a_core_user(api_client):
    body = {
        "name": "Ada Field",
        "email": "ada@example.com",
        "phone": "+1 555",
        "address": "1 Farm Rd",
        "externalId": "x1",
    }
    created = api_client.post(URL, body, format="json")
    assert created.status_code == 201
    user = created.json()
    uuid.UUID(user["id"])
    assert {k: user[k] for k in body} == body

    assert api_client.get(f"{URL}/{user['id']}").json() == user
    assert api_client.delete(f"{URL}/{user['id']}").status_code == 204
    assert_problem(api_client.get(f"{URL}/{user['id']}"), 404, "notFound")


def test_put_replaces_the_whole_user_with_the_id_in_the_body(api_client, core_user):
    response = api_client.put(URL, {"id": str(core_user.id), "name": "Renamed"}, format="json")
    assert response.status_code == 200
    assert response.json() == {
        "id": str(core_user.id),
        "name": "Renamed",
        "email": "",
        "phone": "",
        "address": "",
        "externalId": None,
    }
    assert_problem(api_client.put(URL, {"name": "no id"}, format="json"), 400, "validation")
    assert_problem(api_client.put(URL, {"id": core_user.id.int, "name": "x"}, format="json"), 400, "validation")
    assert_problem(api_client.put(URL, {"id": str(uuid.uuid4()), "name": "x"}, format="json"), 404, "notFound")


LINKS = "/services/widgets/api/magic-link/file-upload"


@pytest.mark.parametrize("external_id", ["grower-77", "p" + "e" * 254])
def test_a_magic_link_users_record_can_be_read_changed_and_put_back(api_client, external_id):
    """A user made through a magic link without an email has its externalId as email (spec), no address: the record
    as read, changed and put back is taken (it was a 400 "Enter a valid email address." for a value the client never
    chose); another value that is no address is still refused, and changes nothing."""
    link = api_client.post(LINKS, {"externalId": external_id}, format="json")
    assert link.status_code == 201, link.content
    user = api_client.get(f"{URL}/{link.json()['coreUserId']}").json()
    assert user["email"] == external_id

    put = api_client.put(URL, user | {"name": "Renamed"}, format="json")
    assert put.status_code == 200, put.content
    assert put.json() == user | {"name": "Renamed"}
    assert api_client.get(f"{URL}/{user['id']}").json() == user | {"name": "Renamed"}

    for email in ("grower-78", external_id + "x"):
        problem = assert_problem(api_client.put(URL, user | {"email": email}, format="json"), 400, "validation")
        assert {error["field"] for error in problem["fieldErrors"]} == {"email"}
    # Still only the record's own email: another user's is no address for this one
    other = api_client.post(LINKS, {"externalId": "grower-79"}, format="json").json()
    problem = assert_problem(api_client.put(URL, {"id": other["coreUserId"], "email": external_id}, format="json"), 400)
    assert {error["field"] for error in problem["fieldErrors"]} == {"email"}
    assert api_client.get(f"{URL}/{user['id']}").json() == user | {"name": "Renamed"}
    # An address, or none, replaces it
    assert api_client.put(URL, user | {"email": "ann@example.com"}, format="json").json()["email"] == "ann@example.com"
    assert api_client.put(URL, user | {"email": ""}, format="json").json()["email"] == ""
    problem = assert_problem(api_client.put(URL, user | {"email": external_id}, format="json"), 400)
    assert {error["field"] for error in problem["fieldErrors"]} == {"email"}


def test_a_put_judges_the_body_before_the_id(api_client, core_user):
    """A body with errors is a 400 whatever its id names; a good body naming no user of the owner a 404."""
    for core_user_id in (str(core_user.id), str(uuid.uuid4()), "not-a-uuid", None):
        problem = assert_problem(api_client.put(URL, {"id": core_user_id, "name": 7}, format="json"), 400)
        assert "name" in [error["field"] for error in problem["fieldErrors"]]
    assert_problem(api_client.put(URL, [str(core_user.id)], format="json"), 400, "validation")


def test_external_id_is_unique_per_owner(api_client, other_client):
    assert api_client.post(URL, {"externalId": "same"}, format="json").status_code == 201
    body = assert_problem(api_client.post(URL, {"externalId": "same"}, format="json"), 409, "externalIdTaken")
    assert body["fieldErrors"][0]["field"] == "externalId"
    # Another API owner may use the same external id.
    assert other_client.post(URL, {"externalId": "same"}, format="json").status_code == 201


def test_put_onto_a_taken_external_id_is_409_and_changes_nothing(api_client, owner):
    CoreUserFactory(owner=owner, external_id="taken")
    user = CoreUserFactory(owner=owner, name="Keep", external_id="mine")
    assert_problem(api_client.put(URL, {"id": str(user.id), "externalId": "taken"}, format="json"), 409)
    user.refresh_from_db()
    assert (user.name, user.external_id) == ("Keep", "mine")


def test_list_filters_by_email_name_and_external_id(api_client, owner):
    a = CoreUserFactory(owner=owner, name="Alice Miller", email="alice@example.com", external_id="ext-a")
    b = CoreUserFactory(owner=owner, name="Bob Miller", email="bob@example.com", external_id="ext-b")
    CoreUserFactory(owner=owner, name="Carol", email="carol@example.com")

    def ids(**params):
        return [u["id"] for u in api_client.get(URL, params).json()]

    assert ids(email="ALICE@example.com") == [str(a.id)]
    assert sorted(ids(name="miller")) == sorted([str(a.id), str(b.id)])
    assert ids(externalId="ext-b") == [str(b.id)]
    assert ids(externalId="none") == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"email": "not-an-email"}, "email"),
        ({"name": 42}, "name"),
        ({"name": "x", "favouriteColour": "red"}, "favouriteColour"),
        ({"externalId": ""}, "externalId"),
    ],
)
def test_bad_bodies_are_400_with_field_errors(api_client, body, field):
    problem = assert_problem(api_client.post(URL, body, format="json"), 400, "validation")
    assert field in [error["field"] for error in problem["fieldErrors"]]


def test_another_owner_cannot_see_change_or_delete_a_core_user(api_client, other_client, core_user):
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{URL}/{core_user.id}",
        resource_id=core_user.id,
        list_urls=[URL],
        extra_urls=[("put", URL, {"id": str(core_user.id), "name": "stolen"})],
    )


def test_malformed_ids_are_404(api_client):
    assert_problem(api_client.get(f"{URL}/not-a-uuid"), 404, "notFound")


def test_core_users_are_listed_by_name_unless_sorted(api_client, owner):
    from tests.factories import CoreUserFactory

    CoreUserFactory(owner=owner, name="B", email="a@example.com")
    CoreUserFactory(owner=owner, name="A", email="z@example.com")
    assert [u["name"] for u in api_client.get(URL).json() if u["name"] in ("A", "B")] == ["A", "B"]


@pytest.mark.parametrize("form", ["{%s}", "urn:uuid:%s", "nodash"])
def test_a_uuid_path_id_in_another_writing_names_nothing(api_client, core_user, form):
    """One resource, one URL: Python reads `{...}`, `urn:uuid:...` and 32 bare hex digits as the same UUID, so a
    DELETE of such a writing deleted the user (and a cache keyed on the path saw another resource)."""
    text = str(core_user.id)
    other = text.replace("-", "") if form == "nodash" else form % text
    for url in (
        f"{URL}/{other}",
        f"/services/fields/api/users/{other}/fields/x",
        f"/services/config/api/configs/{other}",
        f"/services/beta/api/users/{other}/machines",
    ):
        assert_problem(api_client.get(url), 404, "notFound")
    assert_problem(api_client.delete(f"{URL}/{other}"), 404, "notFound")
    machines = f"/services/beta/api/users/{text}/machines"
    machine = api_client.post(machines, {"name": "8R"}, format="json").json()["id"]
    written = machine.replace("-", "") if form == "nodash" else form % machine
    assert_problem(api_client.get(f"{machines}/{written}"), 404, "notFound")
    # The canonical writing in either case names the user (input is case-insensitive, RFC 9562)
    assert api_client.get(f"{URL}/{text.upper()}").json()["id"] == text
    assert api_client.get(f"/services/config/api/configs/{text.upper()}").status_code == 200


def test_a_created_users_id_is_the_services_and_a_sent_one_is_400(api_client):
    """A sent `id` was dropped without a word: a client retrying with "its" id made a second user."""
    body = {"name": "x", "id": "00000000-0000-0000-0000-000000000000"}
    problem = assert_problem(api_client.post(URL, body, format="json"), 400, "validation")
    assert problem["fieldErrors"][0]["field"] == "id" and "externalId" in problem["detail"]
    assert api_client.get(URL).json() == []
