"""Provider applications (`/services/widgets/api/provider-applications`): the API owner's OAuth application
per provider; the client secret is stored encrypted and never returned."""

import pytest
from django.db import connection

from platform_site.accounts.models import ProviderApplication
from tests.tenancy import assert_cross_tenant_404, assert_problem

from .helpers import API, APPLICATION_BODY

URL = f"{API}/provider-applications"
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]
BODY = APPLICATION_BODY


@pytest.fixture(autouse=True)
def _public_base(settings):
    settings.PUBLIC_BASE_URL = "https://platform.example.com"
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # the test hosts do not resolve here


def test_register_read_change_and_delete(api_client):
    response = api_client.post(URL, BODY, format="json")
    assert response.status_code == 201, response.content
    created = response.json()
    assert "top-secret-value" not in response.content.decode()
    assert created == {
        "id": created["id"],
        "provider": "ProviderA",
        "clientId": "my-client",
        "authorizeUrl": BODY["authorizeUrl"],
        "tokenUrl": BODY["tokenUrl"],
        "scopes": ["files", "offline_access"],
        "redirectUri": "https://platform.example.com/links/oauth/callback",
        "createdAt": created["createdAt"],
        "updatedAt": created["updatedAt"],
    }
    assert api_client.get(f"{URL}/{created['id']}").json() == created
    assert api_client.get(URL).json() == [created]

    # A change without clientSecret keeps the stored secret.
    change = {k: v for k, v in BODY.items() if k not in ("provider", "clientSecret")} | {"clientId": "new-client"}
    changed = api_client.put(f"{URL}/{created['id']}", change, format="json")
    assert changed.status_code == 200, changed.content
    assert changed.json()["clientId"] == "new-client"
    application = ProviderApplication.objects.get(pk=created["id"])
    assert application.client_secret == "top-secret-value"
    api_client.put(f"{URL}/{created['id']}", change | {"clientSecret": "rotated"}, format="json")
    application.refresh_from_db()
    assert application.client_secret == "rotated"

    assert api_client.delete(f"{URL}/{created['id']}").status_code == 204
    assert_problem(api_client.get(f"{URL}/{created['id']}"), 404, "notFound")


@pytest.mark.parametrize(
    "token_url",
    [
        "https://evil.example.net/token",  # another host
        "https://auth.example.com:8443/token",  # another port
        "http://auth.example.com/token",  # another scheme
    ],
)
def test_a_token_url_on_another_server_needs_the_secret_again(api_client, token_url):
    """Kept, the stored secret went to whatever server the token URL named next: anyone with the owner's API token
    could have it sent to theirs."""
    body = BODY | {"tokenUrl": "https://Auth.Example.com:443/oauth/token"}
    created = api_client.post(URL, body, format="json").json()
    change = {k: v for k, v in body.items() if k not in ("provider", "clientSecret")}
    refused = api_client.put(f"{URL}/{created['id']}", change | {"tokenUrl": token_url}, format="json")
    assert_problem(refused, 400, "validation")
    assert refused.json()["fieldErrors"] == [
        {
            "field": "clientSecret",
            "message": "Required when tokenUrl names another server: the stored secret goes only where it was given "
            "for.",
        }
    ]
    assert api_client.get(f"{URL}/{created['id']}").json() == created  # nothing changed
    # With the secret, it moves
    moved = api_client.put(
        f"{URL}/{created['id']}", change | {"tokenUrl": token_url, "clientSecret": "new"}, format="json"
    )
    assert moved.status_code == 200 and moved.json()["tokenUrl"] == token_url
    assert ProviderApplication.objects.get(pk=created["id"]).client_secret == "new"


def test_a_token_url_on_the_same_server_keeps_the_secret(api_client):
    created = api_client.post(URL, BODY | {"tokenUrl": "https://auth.example.com/token"}, format="json").json()
    change = {k: v for k, v in BODY.items() if k not in ("provider", "clientSecret")}
    for token_url in ("https://AUTH.example.com:443/v2/token", "https://auth.example.com/oauth/token?x=1"):
        moved = api_client.put(f"{URL}/{created['id']}", change | {"tokenUrl": token_url}, format="json")
        assert moved.status_code == 200 and moved.json()["tokenUrl"] == token_url
    assert ProviderApplication.objects.get(pk=created["id"]).client_secret == "top-secret-value"


def test_an_application_whose_secret_cannot_be_read_answers_and_takes_the_secret_again(api_client, settings):
    """Its secret encrypted under a key the installation no longer has (SECRET_KEY or PROVIDER_SECRETS_KEYS
    changed): every answer about it was a 500, its PUT and DELETE too, and a new POST a 409."""
    from cryptography.fernet import Fernet

    from platform_site.accounts import oauth

    first_key = settings.PROVIDER_SECRETS_KEYS = Fernet.generate_key().decode()
    created = api_client.post(URL, BODY, format="json").json()
    settings.PROVIDER_SECRETS_KEYS = Fernet.generate_key().decode()
    assert api_client.get(URL).json() == [created] and api_client.get(f"{URL}/{created['id']}").json() == created
    with pytest.raises(oauth.TokenRequestFailed, match="cannot be read here .* must send it again"):
        oauth.token_request(ProviderApplication.objects.get(pk=created["id"]), {"grant_type": "refresh_token"})
    # Saved meanwhile (an admin's change of its name), the secret is written back as it was stored
    ProviderApplication.objects.get(pk=created["id"]).save()
    settings.PROVIDER_SECRETS_KEYS = f"{settings.PROVIDER_SECRETS_KEYS},{first_key}"
    assert ProviderApplication.objects.get(pk=created["id"]).client_secret == BODY["clientSecret"]
    settings.PROVIDER_SECRETS_KEYS = settings.PROVIDER_SECRETS_KEYS.split(",")[0]
    change = {k: v for k, v in BODY.items() if k not in ("provider", "clientSecret")}
    refused = assert_problem(api_client.put(f"{URL}/{created['id']}", change, format="json"), 400, "validation")
    assert [e["field"] for e in refused["fieldErrors"]] == ["clientSecret"]
    assert "cannot be read" in refused["fieldErrors"][0]["message"]
    # The ciphertext is kept as it was meanwhile (the right key, restored, reads it)
    again = api_client.put(f"{URL}/{created['id']}", change | {"clientSecret": "sent-again"}, format="json")
    assert again.status_code == 200
    assert ProviderApplication.objects.get(pk=created["id"]).client_secret == "sent-again"
    settings.PROVIDER_SECRETS_KEYS = Fernet.generate_key().decode()
    assert api_client.delete(f"{URL}/{created['id']}").status_code == 204


def test_the_secret_is_encrypted_at_rest(api_client):
    created = api_client.post(URL, BODY, format="json").json()
    with connection.cursor() as cursor:
        cursor.execute("SELECT client_secret FROM accounts_providerapplication WHERE client_id = %s", ["my-client"])
        [(stored,)] = cursor.fetchall()
    assert "top-secret-value" not in stored and len(stored) > 40
    assert ProviderApplication.objects.get(pk=created["id"]).client_secret == "top-secret-value"


def test_one_application_per_provider(api_client, other_client):
    assert api_client.post(URL, BODY, format="json").status_code == 201
    assert_problem(api_client.post(URL, BODY, format="json"), 409, "providerAppExists")
    assert api_client.post(URL, BODY | {"provider": "ProviderB"}, format="json").status_code == 201
    assert other_client.post(URL, BODY, format="json").status_code == 201


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"provider": "ProviderG"}, "provider"),
        ({"provider": "Other"}, "provider"),
        ({"clientId": ""}, "clientId"),
        ({"clientSecret": ""}, "clientSecret"),
        ({"clientSecret": None}, "clientSecret"),
        ({"authorizeUrl": "ftp://auth.example.com/a"}, "authorizeUrl"),
        ({"tokenUrl": "not a url"}, "tokenUrl"),
        ({"scopes": "files"}, "scopes"),
        ({"scopes": [1]}, "scopes[0]"),
        # One scope token each (RFC 6749 3.3): this was taken as one scope and reported as never granted
        ({"scopes": ["files offline_access"]}, "scopes[0]"),
        ({"scopes": ["files", 'a"b']}, "scopes[1]"),
        ({"redirectUri": "https://x.example.com"}, "redirectUri"),
    ],
)
def test_invalid_applications_are_400(api_client, overrides, field):
    body = assert_problem(api_client.post(URL, BODY | overrides, format="json"), 400, "validation")
    assert field in [e["field"] for e in body["fieldErrors"]], body
    assert not ProviderApplication.objects.exists()


def test_a_token_url_into_a_private_network_is_refused_unless_allowed(api_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    body = assert_problem(
        api_client.post(URL, BODY | {"tokenUrl": "http://127.0.0.1:9/token"}, format="json"),
        400,
        "providerUrlNotAllowed",
    )
    assert body["fieldErrors"][0]["field"] == "tokenUrl"
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    assert api_client.post(URL, BODY | {"tokenUrl": "http://127.0.0.1:9/token"}, format="json").status_code == 201


def test_another_owner_cannot_see_change_or_delete_an_application(api_client, other_client):
    created = api_client.post(URL, BODY, format="json").json()
    change = {k: v for k, v in BODY.items() if k != "provider"}
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{URL}/{created['id']}",
        resource_id=created["id"],
        list_urls=[URL],
        updates=[("put", change)],
    )
