"""Farms and growers: long ids, fieldIds / farmIds, list filters, PUT semantics, tenancy."""

import pytest

from fields.models import Farm, Grower
from tests.factories import CoreUserFactory
from tests.fields.helpers import BASE, create_field, field_url
from tests.tenancy import assert_cross_tenant_404, assert_problem

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]


def farms_url(core_user):
    return f"{BASE}/users/{core_user.id}/farms"


def growers_url(core_user):
    return f"{BASE}/users/{core_user.id}/growers"


def test_grower_create_get_put(api_client, core_user):
    response = api_client.post(growers_url(core_user), {"name": "Smith"}, format="json")
    assert response.status_code == 201
    grower = response.json()
    assert isinstance(grower["id"], int)
    assert grower["name"] == "Smith" and grower["coreUserId"] == str(core_user.id) and grower["farmIds"] == []
    assert api_client.get(f"{growers_url(core_user)}/{grower['id']}").json() == grower
    renamed = api_client.put(f"{growers_url(core_user)}/{grower['id']}", {"name": "Jones"}, format="json").json()
    assert renamed["name"] == "Jones"
    # PUT replaces: without a name the grower has none, and `name` is then absent.
    nameless = api_client.put(f"{growers_url(core_user)}/{grower['id']}", {}, format="json").json()
    assert "name" not in nameless
    # An empty name is a name given, kept as it was given
    blank = api_client.put(f"{growers_url(core_user)}/{grower['id']}", {"name": ""}, format="json").json()
    assert blank["name"] == "" and api_client.get(f"{growers_url(core_user)}/{grower['id']}").json()["name"] == ""


def test_farm_create_get_put_and_field_ids(api_client, core_user):
    grower = api_client.post(growers_url(core_user), {}, format="json").json()
    assert "name" not in grower
    farm = api_client.post(farms_url(core_user), {"name": "Home", "growerId": grower["id"]}, format="json").json()
    assert isinstance(farm["id"], int)
    assert (farm["name"], farm["growerId"], farm["fieldIds"], farm["coreUserId"]) == (
        "Home",
        grower["id"],
        [],
        str(core_user.id),
    )
    field = create_field(api_client, core_user, farmId=farm["id"])
    assert field["farmId"] == farm["id"]
    assert api_client.get(f"{farms_url(core_user)}/{farm['id']}").json()["fieldIds"] == [field["id"]]
    assert api_client.get(f"{growers_url(core_user)}/{grower['id']}").json()["farmIds"] == [farm["id"]]
    # PUT replaces: the grower is dropped when not sent.
    replaced = api_client.put(f"{farms_url(core_user)}/{farm['id']}", {"name": "Away"}, format="json").json()
    assert (replaced["name"], replaced["growerId"], replaced["fieldIds"]) == ("Away", None, [field["id"]])
    # A field leaves the farm when it is deleted.
    api_client.delete(field_url(core_user, field["id"]))
    assert api_client.get(f"{farms_url(core_user)}/{farm['id']}").json()["fieldIds"] == []


def test_a_farm_or_grower_read_changed_and_put_back_is_replaced(api_client, core_user):
    """The body a GET answered, with a new name, was a 400: its read-only keys (`id`, `fieldIds`...) counted as
    unknown."""
    grower = api_client.post(growers_url(core_user), {"name": "Smith"}, format="json").json()
    farm = api_client.post(farms_url(core_user), {"name": "Home", "growerId": grower["id"]}, format="json").json()
    field = create_field(api_client, core_user, farmId=farm["id"])
    farm_url, grower_url = f"{farms_url(core_user)}/{farm['id']}", f"{growers_url(core_user)}/{grower['id']}"
    # When each is read, renamed and put back whole
    farm = api_client.get(farm_url).json()
    renamed = api_client.put(farm_url, {**farm, "name": "Away"}, format="json")
    grower = api_client.get(grower_url).json()
    renamed_grower = api_client.put(grower_url, {**grower, "name": "Jones"}, format="json")
    # Then each is replaced, its read-only keys as they were
    assert renamed.status_code == 200, renamed.content
    assert renamed.json() == {**farm, "name": "Away"} and renamed.json()["fieldIds"] == [field["id"]]
    assert renamed_grower.status_code == 200 and renamed_grower.json() == {**grower, "name": "Jones"}
    # And a read-only key sent changed is a 400 naming it (a field is not moved by `fieldIds`), nothing changed
    moved = assert_problem(api_client.put(farm_url, {**farm, "fieldIds": [], "name": "X"}, format="json"), 400)
    assert moved["fieldErrors"] == [
        {"field": "fieldIds", "message": f'Read-only: it is ["{field["id"]}"]; send that or leave the key out.'}
    ]
    # (JSON types count: `1.0` is not the id 1; a UUID in capitals is itself)
    for changed in (grower["id"] + 1, float(grower["id"])):
        other = assert_problem(api_client.put(grower_url, {**grower, "id": changed}, format="json"), 400)
        assert [e["field"] for e in other["fieldErrors"]] == ["id"]
    upper = api_client.put(grower_url, {**grower, "coreUserId": grower["coreUserId"].upper()}, format="json")
    assert upper.status_code == 200, upper.content
    # And every error of the body comes in one answer
    both = assert_problem(api_client.put(farm_url, {**farm, "fieldIds": [], "name": 5}, format="json"), 400)
    assert sorted(e["field"] for e in both["fieldErrors"]) == ["fieldIds", "name"]
    unknown = assert_problem(api_client.put(farm_url, {"name": "X", "acres": 40}, format="json"), 400)
    assert unknown["fieldErrors"] == [{"field": "acres", "message": "Unknown field."}]
    assert api_client.get(farm_url).json()["name"] == "Away"


@pytest.mark.parametrize(
    "body", [{"name": 5}, {"growerId": "1"}, {"growerId": 999999}, {"growerId": 1.5}, {"size": 3}, [1]]
)
def test_bad_farm_bodies_are_400(api_client, core_user, body):
    assert_problem(api_client.post(farms_url(core_user), body, format="json"), 400)
    assert Farm.objects.count() == 0


def test_a_grower_of_another_user_cannot_own_the_farm(api_client, core_user, owner):
    grower = api_client.post(growers_url(CoreUserFactory(owner=owner)), {}, format="json").json()
    assert_problem(api_client.post(farms_url(core_user), {"growerId": grower["id"]}, format="json"), 400)
    farm = api_client.post(farms_url(core_user), {}, format="json").json()
    assert_problem(
        api_client.put(f"{farms_url(core_user)}/{farm['id']}", {"growerId": grower["id"]}, format="json"), 400
    )


@pytest.mark.parametrize("body", [{"name": 5}, {"name": "x", "farmIds": []}, "x"])
def test_bad_grower_bodies_are_400(api_client, core_user, body):
    assert_problem(api_client.post(growers_url(core_user), body, format="json"), 400)
    assert Grower.objects.count() == 0


def test_a_put_without_a_body_is_400_and_replaces_nothing(api_client, core_user):
    """An empty JSON document clears a farm's name, but no body at all is a mistake (`curl -X PUT` without `-d`):
    DRF read it as `{}` and wiped the farm."""
    grower = api_client.post(growers_url(core_user), {"name": "Smith"}, format="json").json()
    farm = api_client.post(farms_url(core_user), {"name": "Home", "growerId": grower["id"]}, format="json").json()
    for url, before in (
        (f"{farms_url(core_user)}/{farm['id']}", farm),
        (f"{growers_url(core_user)}/{grower['id']}", None),
    ):
        before = api_client.get(url).json()
        for content_type in ("application/json", None):
            response = api_client.generic("PUT", url, b"", **({"content_type": content_type} if content_type else {}))
            problem = assert_problem(response, 400, "malformedRequest")
            assert "no body" in problem["detail"]
        assert api_client.get(url).json() == before
    # A missing farm is still a 404 first, and `{}` still clears
    assert_problem(api_client.generic("PUT", f"{farms_url(core_user)}/999999", b""), 404, "notFound")
    assert api_client.put(f"{farms_url(core_user)}/{farm['id']}", {}, format="json").json()["name"] is None


def test_unknown_farm_or_grower_is_404(api_client, core_user):
    for url in (f"{farms_url(core_user)}/999999", f"{farms_url(core_user)}/abc", f"{growers_url(core_user)}/999999"):
        assert_problem(api_client.get(url), 404, "notFound")
        assert_problem(api_client.put(url, {}, format="json"), 404, "notFound")
    # Past a 64-bit column, and past what Python reads as a number (4,300 digits): no such id either
    for digits in ("9" * 30, "9" * 5000, "0" * 5000):
        for url in (f"{farms_url(core_user)}/{digits}", f"{growers_url(core_user)}/{digits}"):
            assert_problem(api_client.get(url), 404, "notFound")
            assert_problem(api_client.put(url, {"name": "x"}, format="json"), 404, "notFound")


def test_an_id_written_otherwise_than_as_it_is_names_nothing(api_client, core_user):
    """`+7`, `07`, ` 7` and an Arabic-Indic `٧` all named farm 7 (Python reads each as 7)."""
    farm = api_client.post(farms_url(core_user), {"name": "Home"}, format="json").json()
    grower = api_client.post(growers_url(core_user), {"name": "Smith"}, format="json").json()
    for url, row_id in ((farms_url(core_user), farm["id"]), (growers_url(core_user), grower["id"])):
        assert api_client.get(f"{url}/{row_id}").status_code == 200
        arabic_indic = "".join(chr(0x660 + int(digit)) for digit in str(row_id))
        for written in (f"+{row_id}", f"0{row_id}", f"%20{row_id}", f"{row_id}%20", arabic_indic, f"{row_id}.0"):
            assert_problem(api_client.get(f"{url}/{written}"), 404, "notFound")
            assert_problem(api_client.put(f"{url}/{written}", {"name": "x"}, format="json"), 404, "notFound")
    assert Farm.objects.get().name == "Home" and Grower.objects.get().name == "Smith"


def test_lists_and_their_filters(api_client, core_user, owner):
    other_user = CoreUserFactory(owner=owner)
    grower = api_client.post(growers_url(core_user), {"name": "G"}, format="json").json()
    with_grower = api_client.post(farms_url(core_user), {"growerId": grower["id"]}, format="json").json()
    plain = api_client.post(farms_url(core_user), {}, format="json").json()
    theirs = api_client.post(farms_url(other_user), {}, format="json").json()
    Farm.objects.filter(pk=plain["id"]).update(provider_name="ProviderC")
    Grower.objects.create(core_user=other_user, provider_name="ProviderA", provider_grower_id="x")

    def ids(url, **params):
        response = api_client.get(url, params)
        assert response.status_code == 200, response.content
        return [item["id"] for item in response.json()]

    assert ids(f"{BASE}/farms") == [with_grower["id"], plain["id"], theirs["id"]]
    assert ids(f"{BASE}/farms", growerId=grower["id"]) == [with_grower["id"]]
    assert ids(f"{BASE}/farms", provider="ProviderC") == [plain["id"]]
    assert ids(f"{BASE}/farms", coreUserId=str(other_user.id)) == [theirs["id"]]
    assert ids(f"{BASE}/farms", sort="id,desc", size=1) == [theirs["id"]]
    assert len(ids(f"{BASE}/growers")) == 2
    assert ids(f"{BASE}/growers", coreUserId=str(core_user.id)) == [grower["id"]]
    provider_grower = api_client.get(f"{BASE}/growers", {"provider": "ProviderA"}).json()
    assert [g["providerGrowerId"] for g in provider_grower] == ["x"]
    assert ids(f"{BASE}/farms", provider="ServiceOwn") == [with_grower["id"], theirs["id"]]
    assert ids(f"{BASE}/growers", provider="ServiceOwn") == [grower["id"]]
    for url in (f"{BASE}/farms", f"{BASE}/growers"):  # a misspelt provider answered an empty list
        body = assert_problem(api_client.get(url, {"provider": "providerA"}), 400, "validation")
        assert body["fieldErrors"][0]["field"] == "provider"
    for url, params in [
        (f"{BASE}/farms", {"growerId": "x"}),
        (f"{BASE}/farms", {"coreUserId": "x"}),
        (f"{BASE}/growers", {"sort": "farmIds"}),
        (f"{BASE}/growers", {"size": "many"}),
    ]:
        assert_problem(api_client.get(url, params), 400)


def test_farms_without_a_grower_come_last_whichever_the_direction(api_client, core_user):
    """NULLs last both ways, on PostgreSQL (which puts them first in descending order) and SQLite (first in
    ascending order) alike."""
    first, second = (api_client.post(growers_url(core_user), {}, format="json").json()["id"] for _ in range(2))
    plain = api_client.post(farms_url(core_user), {}, format="json").json()["id"]
    of_first = api_client.post(farms_url(core_user), {"growerId": first}, format="json").json()["id"]
    of_second = api_client.post(farms_url(core_user), {"growerId": second}, format="json").json()["id"]

    def ids(sort):
        return [farm["id"] for farm in api_client.get(f"{BASE}/farms", {"sort": sort}).json()]

    assert ids("growerId") == [of_first, of_second, plain]
    assert ids("growerId,desc") == [of_second, of_first, plain]


def test_another_core_users_farms_and_growers_are_not_under_this_users_urls(api_client, owner, core_user):
    other = CoreUserFactory(owner=owner)
    grower = api_client.post(growers_url(core_user), {"name": "G"}, format="json").json()
    farm = api_client.post(farms_url(core_user), {"name": "F", "growerId": grower["id"]}, format="json").json()
    for url, item in ((farms_url(other), farm), (growers_url(other), grower)):
        assert_problem(api_client.get(f"{url}/{item['id']}"), 404, "notFound")
        assert_problem(api_client.put(f"{url}/{item['id']}", {"name": "stolen"}, format="json"), 404, "notFound")
    assert Farm.objects.get(pk=farm["id"]).name == "F" and Grower.objects.get(pk=grower["id"]).name == "G"


def test_farms_and_growers_are_invisible_to_another_owner(api_client, other_client, core_user):
    grower = api_client.post(growers_url(core_user), {"name": "G"}, format="json").json()
    farm = api_client.post(farms_url(core_user), {"name": "F", "growerId": grower["id"]}, format="json").json()
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{farms_url(core_user)}/{farm['id']}",
        resource_id=farm["id"],
        list_urls=[f"{BASE}/farms", f"{BASE}/farms?coreUserId={core_user.id}"],
        updates=[("put", {"name": "stolen"})],
        delete=False,
        extra_urls=[("post", farms_url(core_user), {"name": "x"})],
        core_user=core_user,
    )
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{growers_url(core_user)}/{grower['id']}",
        resource_id=grower["id"],
        list_urls=[f"{BASE}/growers"],
        updates=[("put", {"name": "stolen"})],
        delete=False,
        extra_urls=[("post", growers_url(core_user), {"name": "x"})],
        core_user=core_user,
    )
    assert (Farm.objects.count(), Grower.objects.count()) == (1, 1)


def test_a_json_boolean_is_no_farm_or_grower_id(api_client, core_user):
    """`true` is no id, even where a farm and a grower of id 1 exist (Python reads `True` as 1)."""
    Farm.objects.create(id=1, core_user=core_user, name="Farm one")
    Grower.objects.create(id=1, core_user=core_user, name="Grower one")
    field = create_field(api_client, core_user)
    body = assert_problem(api_client.patch(field_url(core_user, field["id"]), {"farmId": True}, format="json"), 400)
    assert body["fieldErrors"][0]["field"] == "farmId"
    assert api_client.get(field_url(core_user, field["id"])).json()["farmId"] is None
    response = api_client.post(farms_url(core_user), {"name": "Farm two", "growerId": True}, format="json")
    assert assert_problem(response, 400)["fieldErrors"][0]["field"] == "growerId"
    assert Farm.objects.count() == 1


def test_a_farms_field_ids_are_in_id_order(api_client, core_user):
    farm = api_client.post(farms_url(core_user), {"name": "Home"}, format="json").json()
    for field_id in ("b", "a", "c"):  # made in this order
        create_field(api_client, core_user, id=field_id, farmId=farm["id"])
    assert api_client.get(f"{farms_url(core_user)}/{farm['id']}").json()["fieldIds"] == ["a", "b", "c"]


def test_a_field_of_an_empty_provider_name_is_the_services_own(api_client, core_user):
    from shapely.geometry import MultiPolygon, box

    from fields.services import field_create

    field_create(core_user=core_user, id="blank", geometry=MultiPolygon([box(10, 50, 10.01, 50.01)]), provider_name="")
    listed = [f["id"] for f in api_client.get(f"{BASE}/fields", {"provider": "ServiceOwn"}).json()]
    assert listed == ["blank"]


@pytest.mark.parametrize("grower", [False, True])
def test_a_farm_replaced_after_its_core_user_was_deleted_is_a_404(owner, grower):
    """The PUT read the farm, then the user's deletion committed: the farm's user was read (for the grower check)
    before the user was kept, a CoreUser.DoesNotExist, a 500."""
    from fields.services import farm_create, farm_replace, grower_create
    from platform_site.accounts.services import core_user_delete
    from platform_site.api.errors import NotFoundError

    core_user = CoreUserFactory(owner=owner)
    farm = farm_create(core_user=core_user, name="A")
    kept_grower = grower_create(core_user=core_user, name="G") if grower else None
    read_by_the_put = Farm.objects.get(pk=farm.pk)
    core_user_delete(core_user=core_user)
    with pytest.raises(NotFoundError):
        farm_replace(farm=read_by_the_put, name="B", grower=kept_grower)
    assert not Farm.objects.exists()
