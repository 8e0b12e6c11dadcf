"""Magic links API (`/services/widgets/api/magic-link/...`): the three kinds, creation for an existing
user and with user creation, validation, revocation and tenancy."""

import hashlib
import re
import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from magiclinks.models import MagicLink
from platform_site.accounts.models import CoreUser
from tests.factories import CoreUserFactory
from tests.tenancy import assert_cross_tenant_404, assert_problem

from .helpers import API, KINDS, body_for, create_link, provider_app, token_of

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


@pytest.fixture
def apps(owner):
    return [provider_app(owner, p) for p in ("ProviderA", "ProviderB")]


@pytest.mark.parametrize("kind", KINDS)
def test_create_for_an_existing_user_then_read_list_and_delete(api_client, core_user, apps, settings, kind):
    settings.PUBLIC_BASE_URL = "https://platform.example.com"
    before = timezone.now()
    response = create_link(api_client, core_user, kind)
    after = timezone.now()
    assert response.status_code == 201, response.content
    created = response.json()
    assert set(created) == {"id", "coreUserId", "link", "expiresAt"}
    assert created["coreUserId"] == str(core_user.id)
    assert created["link"].startswith("https://platform.example.com/links/")
    assert TIMESTAMP.match(created["expiresAt"])
    link = MagicLink.objects.get(pk=created["id"])
    # (900 s from a moment of the request: bounded by the clock around it, however slow a busy machine makes it)
    assert before + timedelta(seconds=900) <= link.expires_at <= after + timedelta(seconds=900)
    assert link.expires_at - link.created_at == timedelta(seconds=900)  # counted from the creation, exactly

    got = api_client.get(f"{API}/magic-link/{kind}/{created['id']}").json()
    expected = {
        "id": created["id"],
        "coreUserId": str(core_user.id),
        "widget": KINDS[kind],
        "expiresAt": created["expiresAt"],
        "createdAt": got["createdAt"],
        "lastAccessedAt": None,
        "usageCount": 0,
        "settings": {"backgroundColor": "#F5F5F5", "showLeafUserName": False}
        | ({} if kind == "file-upload" else {"disconnectedEnabled": False}),
    }
    if kind == "provider":
        expected["allowedProviders"] = ["ProviderA"]
    if kind == "authentication":
        expected["provider"] = "ProviderA"
    assert got == expected
    assert TIMESTAMP.match(got["createdAt"])

    listed = api_client.get(f"{API}/magic-link/{kind}")
    assert listed.status_code == 200 and listed["X-Total-Count"] == "1"
    assert listed.json() == [got]
    # A link of one kind is not found under another.
    for other in set(KINDS) - {kind}:
        assert_problem(api_client.get(f"{API}/magic-link/{other}/{created['id']}"), 404, "notFound")
        assert api_client.get(f"{API}/magic-link/{other}").json() == []

    assert api_client.delete(f"{API}/magic-link/{kind}/{created['id']}").status_code == 204
    assert_problem(api_client.get(f"{API}/magic-link/{kind}/{created['id']}"), 404, "notFound")
    assert_problem(api_client.delete(f"{API}/magic-link/{kind}/{created['id']}"), 404, "notFound")
    assert api_client.get(f"{API}/magic-link/{kind}").json() == []


def test_the_token_is_random_long_and_stored_only_as_a_hash(api_client, core_user):
    tokens = [token_of(create_link(api_client, core_user, "file-upload").json()["link"]) for _ in range(3)]
    assert len(set(tokens)) == 3
    for token in tokens:
        assert len(token) >= 43  # 32 random bytes, base64url: 256 bits
        assert MagicLink.objects.filter(token_hash=hashlib.sha256(token.encode()).hexdigest()).exists()
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM magiclinks_magiclink")
        stored = repr(cursor.fetchall())
    assert not any(token in stored for token in tokens)


def test_settings_are_stored_and_returned(api_client, core_user, apps):
    settings_body = {
        "backgroundColor": "#0a3d2e",
        "companyLogo": "https://cdn.example.com/logo.png",
        "companyName": "Acme Agronomy",
        "headerImage": "http://cdn.example.com/header.jpg",
        "showLeafUserName": True,
        "disconnectedEnabled": True,
    }
    created = create_link(api_client, core_user, "provider", settings=settings_body, expiresIn=31536000).json()
    got = api_client.get(f"{API}/magic-link/provider/{created['id']}").json()
    assert got["settings"] == settings_body | {"backgroundColor": "#0A3D2E"}
    expires = MagicLink.objects.get(pk=created["id"]).expires_at
    assert abs((expires - timezone.now()) - timedelta(days=365)) < timedelta(seconds=5)


@pytest.mark.parametrize(
    ("kind", "overrides", "field"),
    [
        ("file-upload", {"expiresIn": 899}, "expiresIn"),
        ("file-upload", {"expiresIn": 31536001}, "expiresIn"),
        ("file-upload", {"expiresIn": "900"}, "expiresIn"),
        ("file-upload", {"expiresIn": 1000.5}, "expiresIn"),
        ("file-upload", {"expiresIn": True}, "expiresIn"),
        ("file-upload", {"settings": {"backgroundColor": "red"}}, "settings.backgroundColor"),
        ("file-upload", {"settings": {"backgroundColor": "#12345"}}, "settings.backgroundColor"),
        ("file-upload", {"settings": {"companyLogo": "javascript:alert(1)"}}, "settings.companyLogo"),
        ("file-upload", {"settings": {"headerImage": "ftp://example.com/x.png"}}, "settings.headerImage"),
        ("file-upload", {"settings": {"companyLogo": "not a url"}}, "settings.companyLogo"),
        ("file-upload", {"settings": {"showLeafUserName": "yes"}}, "settings.showLeafUserName"),
        ("file-upload", {"settings": {"disconnectedEnabled": True}}, "settings.disconnectedEnabled"),
        ("file-upload", {"settings": {"fontSize": 3}}, "settings.fontSize"),
        ("file-upload", {"settings": "blue"}, "settings"),
        ("file-upload", {"provider": "ProviderA"}, "provider"),
        ("file-upload", {"externalId": "x"}, "externalId"),
        ("provider", {"allowedProviders": []}, "allowedProviders"),
        ("provider", {"allowedProviders": ["ProviderG"]}, "allowedProviders[0]"),
        ("provider", {"allowedProviders": ["ServiceOwn"]}, "allowedProviders[0]"),
        ("provider", {"allowedProviders": "ProviderA"}, "allowedProviders"),
        ("provider", {"settings": {"disconnectedEnabled": "true"}}, "settings.disconnectedEnabled"),
        ("authentication", {"provider": "Other"}, "provider"),
        ("authentication", {"provider": None}, "provider"),
        ("authentication", {"allowedProviders": ["ProviderA"]}, "allowedProviders"),
    ],
)
def test_invalid_creations_are_400(api_client, core_user, apps, kind, overrides, field):
    body = assert_problem(create_link(api_client, core_user, kind, **overrides), 400, "validation")
    assert field in [e["field"] for e in body["fieldErrors"]], body
    assert not MagicLink.objects.exists()


def test_missing_required_entries_are_400(api_client, core_user, apps):
    url = f"{API}/magic-link/users/{core_user.id}"
    body = assert_problem(api_client.post(f"{url}/provider", {}, format="json"), 400, "validation")
    assert [e["field"] for e in body["fieldErrors"]] == ["allowedProviders"]
    body = assert_problem(api_client.post(f"{url}/authentication", {}, format="json"), 400, "validation")
    assert [e["field"] for e in body["fieldErrors"]] == ["provider"]
    assert_problem(api_client.post(f"{url}/file-upload", [], format="json"), 400, "validation")
    assert_problem(api_client.post(f"{url}/file-upload", "x", content_type="application/json"), 400)


@pytest.mark.parametrize("kind", ["provider", "authentication"])
def test_provider_links_need_the_provider_application(api_client, owner, core_user, kind):
    body = assert_problem(create_link(api_client, core_user, kind), 400, "providerAppNotConfigured")
    assert "ProviderA" in body["detail"]
    # The body's key: a provider link's `allowedProviders` (it named `provider`), an authentication link's `provider`
    assert body["fieldErrors"][0]["field"] == {"provider": "allowedProviders", "authentication": "provider"}[kind]
    provider_app(owner, "ProviderA")
    if kind == "provider":
        body = assert_problem(
            create_link(api_client, core_user, kind, allowedProviders=["ProviderA", "ProviderC"]),
            400,
            "providerAppNotConfigured",
        )
        assert "ProviderC" in body["detail"] and "ProviderA" not in body["detail"]
    assert not MagicLink.objects.exists()
    assert create_link(api_client, core_user, kind).status_code == 201


def test_another_owners_application_does_not_count(api_client, other_owner, core_user):
    provider_app(other_owner, "ProviderA")
    assert_problem(create_link(api_client, core_user, "authentication"), 400, "providerAppNotConfigured")


def test_allowed_providers_keep_their_order_without_duplicates(api_client, core_user, apps):
    created = create_link(
        api_client, core_user, "provider", allowedProviders=["ProviderB", "ProviderA", "ProviderB"]
    ).json()
    got = api_client.get(f"{API}/magic-link/provider/{created['id']}").json()
    assert got["allowedProviders"] == ["ProviderB", "ProviderA"]


@pytest.mark.parametrize("kind", KINDS)
def test_create_with_user_creation_finds_or_creates_by_external_id(api_client, owner, apps, kind):
    body = body_for(kind) | {"externalId": "grower-42"}
    if kind == "provider":
        body = {"provider": "ProviderB", "externalId": "grower-42"}
    first = api_client.post(f"{API}/magic-link/{kind}", body, format="json")
    assert first.status_code == 201, first.content
    user = CoreUser.objects.get(pk=first.json()["coreUserId"])
    assert (user.owner, user.external_id, user.name, user.email) == (owner, "grower-42", "grower-42", "grower-42")
    # Again, with a name and e-mail: the same user, unchanged (later changes go through the user endpoints).
    second = api_client.post(
        f"{API}/magic-link/{kind}", body | {"name": "Ann", "email": "ann@example.com"}, format="json"
    ).json()
    assert second["coreUserId"] == str(user.id) and second["id"] != first.json()["id"]
    user.refresh_from_db()
    assert (user.name, user.email) == ("grower-42", "grower-42")
    assert CoreUser.objects.filter(owner=owner).count() == 1
    if kind == "provider":
        assert api_client.get(f"{API}/magic-link/provider/{second['id']}").json()["allowedProviders"] == ["ProviderB"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_longest_external_id_is_also_the_users_email(api_client, apps, kind):
    """An externalId of 255 characters (the most it may have) stands for the e-mail too (was a 500 on PostgreSQL,
    whose e-mail column held 254)."""
    external_id = "p" + "e" * 254
    body = (body_for(kind) if kind != "provider" else {"allowedProviders": ["ProviderA"]}) | {"externalId": external_id}
    response = api_client.post(f"{API}/magic-link/{kind}", body, format="json")
    assert response.status_code == 201, response.content
    user = CoreUser.objects.get(pk=response.json()["coreUserId"])
    assert user.external_id == user.email == user.name == external_id
    # One more is a 400 that names it, and makes no user
    problem = assert_problem(
        api_client.post(f"{API}/magic-link/{kind}", body | {"externalId": "x" * 256}, format="json"), 400
    )
    assert "externalId" in [e["field"] for e in problem["fieldErrors"]] and CoreUser.objects.count() == 1


def test_user_creation_uses_name_and_email_and_is_per_owner(api_client, other_client, owner, other_owner, apps):
    provider_app(other_owner, "ProviderA")
    body = {"externalId": "e-1", "name": "Ann Grower", "email": "ann@example.com"}
    mine = api_client.post(f"{API}/magic-link/file-upload", body, format="json").json()
    theirs = other_client.post(f"{API}/magic-link/authentication", body | {"provider": "ProviderA"}, format="json")
    assert theirs.status_code == 201
    assert mine["coreUserId"] != theirs.json()["coreUserId"]
    user = CoreUser.objects.get(pk=mine["coreUserId"])
    assert (user.name, user.email) == ("Ann Grower", "ann@example.com")


def test_provider_link_with_user_creation_accepts_allowed_providers(api_client, apps):
    body = {"externalId": "e-2", "allowedProviders": ["ProviderA", "ProviderB"]}
    created = api_client.post(f"{API}/magic-link/provider", body, format="json").json()
    got = api_client.get(f"{API}/magic-link/provider/{created['id']}").json()
    assert got["allowedProviders"] == ["ProviderA", "ProviderB"]


@pytest.mark.parametrize(
    ("kind", "body", "field"),
    [
        ("file-upload", {}, "externalId"),
        ("file-upload", {"externalId": ""}, "externalId"),
        ("file-upload", {"externalId": 42}, "externalId"),
        ("file-upload", {"externalId": "x", "email": "not-an-email"}, "email"),
        ("file-upload", {"externalId": "x", "allowedProviders": ["ProviderA"]}, "allowedProviders"),
        ("provider", {"externalId": "x"}, "provider"),
        ("provider", {"externalId": "x", "provider": "ProviderA", "allowedProviders": ["ProviderB"]}, "provider"),
        ("authentication", {"externalId": "x"}, "provider"),
    ],
)
def test_invalid_creations_with_user_are_400_and_create_no_user(api_client, owner, apps, kind, body, field):
    response = assert_problem(api_client.post(f"{API}/magic-link/{kind}", body, format="json"), 400, "validation")
    assert field in [e["field"] for e in response["fieldErrors"]], response
    assert not CoreUser.objects.filter(owner=owner).exists()


def test_no_user_is_created_when_the_provider_app_is_missing(api_client, owner):
    body = {"externalId": "e-3", "provider": "ProviderA"}
    assert_problem(
        api_client.post(f"{API}/magic-link/authentication", body, format="json"), 400, "providerAppNotConfigured"
    )
    assert not CoreUser.objects.filter(owner=owner).exists()


@pytest.mark.django_db(transaction=True)
def test_concurrent_creations_with_one_external_id_make_one_user(owner, apps, make_client):
    if connection.vendor == "sqlite":
        pytest.skip("SQLite serialises writers; the race needs PostgreSQL")
    results, barrier = [], threading.Barrier(6)

    def create():
        client = make_client(owner)
        barrier.wait()
        results.append(client.post(f"{API}/magic-link/file-upload", {"externalId": "same"}, format="json"))
        connection.close()

    threads = [threading.Thread(target=create) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [r.status_code for r in results] == [201] * 6
    assert len({r.json()["coreUserId"] for r in results}) == 1
    assert CoreUser.objects.filter(owner=owner, external_id="same").count() == 1


def test_unknown_or_foreign_core_user_is_404(api_client, other_owner, apps):
    foreign = CoreUserFactory(owner=other_owner)
    for core_user_id in (foreign.id, "00000000-0000-0000-0000-000000000000", "not-a-uuid"):
        url = f"{API}/magic-link/users/{core_user_id}/file-upload"
        assert_problem(api_client.post(url, {}, format="json"), 404, "notFound")
    assert not MagicLink.objects.exists()


def test_unauthenticated_requests_are_401(client, core_user):
    assert_problem(client.get(f"{API}/magic-link/provider"), 401)
    assert_problem(client.post(f"{API}/magic-link/file-upload", {"externalId": "x"}), 401)


def test_lists_page_sort_and_filter_by_core_user(api_client, owner, core_user):
    other_user = CoreUserFactory(owner=owner)
    ids = [create_link(api_client, core_user, "file-upload").json()["id"] for _ in range(3)]
    mine_only = create_link(api_client, other_user, "file-upload").json()["id"]
    response = api_client.get(f"{API}/magic-link/file-upload", {"size": 2})
    assert response["X-Total-Count"] == "4" and len(response.json()) == 2
    newest_first = [x["id"] for x in api_client.get(f"{API}/magic-link/file-upload").json()]
    assert newest_first == [mine_only, *reversed(ids)]
    assert [x["id"] for x in api_client.get(f"{API}/magic-link/file-upload", {"sort": "createdAt"}).json()] == [
        *ids,
        mine_only,
    ]
    filtered = api_client.get(f"{API}/magic-link/file-upload", {"coreUserId": str(other_user.id)}).json()
    assert [x["id"] for x in filtered] == [mine_only]
    assert_problem(api_client.get(f"{API}/magic-link/file-upload", {"sort": "token"}), 400, "validation")


def test_links_have_no_update(api_client, core_user):
    created = create_link(api_client, core_user, "file-upload").json()
    assert_problem(api_client.put(f"{API}/magic-link/file-upload/{created['id']}", {}, format="json"), 405)


@pytest.mark.parametrize("kind", KINDS)
def test_another_owner_cannot_see_or_delete_a_link(api_client, other_client, core_user, apps, kind):
    created = create_link(api_client, core_user, kind).json()
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{API}/magic-link/{kind}/{created['id']}",
        resource_id=created["id"],
        list_urls=[f"{API}/magic-link/{kind}"],
        extra_urls=[("post", f"{API}/magic-link/users/{core_user.id}/{kind}", body_for(kind))],
    )
    assert MagicLink.objects.filter(core_user=core_user).count() == 1
