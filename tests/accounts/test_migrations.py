"""Migrations of the accounts app that change data: run forwards over rows written in the older schema."""

import pytest

from tests.factories import OwnerFactory
from tests.migrating import migrate

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.embedded,
    pytest.mark.usefixtures("latest_schema_after"),
]

BEFORE, AFTER = ("accounts", "0007_login_failures"), ("accounts", "0008_provider_application_scopes_tokens")
TOKEN_SERVER = ("accounts", "0009_provider_credential_token_server")


def test_scopes_the_admin_stored_as_any_json_become_scope_tokens():
    """The admin took any JSON for scopes: a text was listed as a text and sent one character a scope, numbers made
    the connect page a 500."""
    owners = [OwnerFactory() for _ in range(5)]
    apps = migrate(BEFORE)
    ProviderApplication = apps.get_model("accounts", "ProviderApplication")
    stored = ["files offline_access", [1, "files", None, "a b"], {"a": "b"}, 7, ["files", "offline_access"]]
    made = [
        ProviderApplication.objects.create(
            owner_id=owner.pk,
            provider="ProviderA",
            client_id="client",
            client_secret="secret",
            authorize_url="https://provider.example/authorize",
            token_url="https://provider.example/token",
            scopes=scopes,
        )
        for owner, scopes in zip(owners, stored, strict=True)
    ]

    apps = migrate(AFTER)
    ProviderApplication = apps.get_model("accounts", "ProviderApplication")
    assert [ProviderApplication.objects.get(pk=a.pk).scopes for a in made] == [
        ["files", "offline_access"],
        ["files", "a", "b"],
        [],
        [],
        ["files", "offline_access"],
    ]


def test_credentials_take_their_applications_token_server():
    """A refresh goes only to the server that issued the tokens: those connected before it was recorded were issued
    by their application's token server of now."""
    owners = [OwnerFactory() for _ in range(2)]
    apps = migrate(AFTER)
    ProviderApplication = apps.get_model("accounts", "ProviderApplication")
    CoreUser = apps.get_model("accounts", "CoreUser")
    ProviderCredential = apps.get_model("accounts", "ProviderCredential")
    for owner, token_url in zip(owners, ["https://Auth.Example.com/token", "http://127.0.0.1:8080/t"], strict=True):
        ProviderApplication.objects.create(
            owner_id=owner.pk, provider="ProviderA", client_id="c", client_secret="s",
            authorize_url="https://p.example/a", token_url=token_url, scopes=[],
        )  # fmt: skip
    credentials = [
        ProviderCredential.objects.create(
            core_user=CoreUser.objects.create(owner_id=owner.pk, name="u"), provider=provider, access_token="a"
        )
        for owner in owners
        for provider in ("ProviderA", "ProviderB")
    ]

    apps = migrate(TOKEN_SERVER)
    ProviderCredential = apps.get_model("accounts", "ProviderCredential")
    assert [ProviderCredential.objects.get(pk=c.pk).token_server for c in credentials] == [
        "https://auth.example.com:443",
        "",  # no application for ProviderB
        "http://127.0.0.1:8080",
        "",
    ]


def test_provider_secrets_stored_under_the_old_embedded_default_key_are_written_again_under_the_key_in_use(settings):
    """The fixed SECRET_KEY of the embedded default until 2026-11-27 derived the key of stored provider secrets; an
    installation that upgraded made its own SECRET_KEY, which could not read them (every answer about a provider
    application was a 500)."""
    from cryptography.fernet import Fernet
    from django.db import connection

    from platform_site.accounts.crypto import LEGACY_DEFAULT_SECRET_KEY, _derived_key

    owner = OwnerFactory()
    apps = migrate(TOKEN_SERVER)
    ProviderApplication = apps.get_model("accounts", "ProviderApplication")
    CoreUser, ProviderCredential = (
        apps.get_model("accounts", "CoreUser"),
        apps.get_model("accounts", "ProviderCredential"),
    )
    settings.PROVIDER_SECRETS_KEYS, settings.SECRET_KEY = "", LEGACY_DEFAULT_SECRET_KEY
    ProviderApplication.objects.create(
        owner_id=owner.pk, provider="ProviderA", client_id="c", client_secret="the-secret",
        authorize_url="https://p.example/a", token_url="https://p.example/t", scopes=[],
    )  # fmt: skip
    ProviderCredential.objects.create(
        core_user=CoreUser.objects.create(owner_id=owner.pk, name="u"), provider="ProviderA", access_token="a-token"
    )
    settings.SECRET_KEY = "the-installations-own-key"

    migrate(("accounts", "0010_provider_secrets_under_the_installations_key"))
    own = Fernet(_derived_key("the-installations-own-key"))
    with connection.cursor() as cursor:
        cursor.execute("SELECT client_secret FROM accounts_providerapplication WHERE client_id = 'c'")
        assert own.decrypt(cursor.fetchone()[0].encode()) == b"the-secret"
        cursor.execute("SELECT access_token, refresh_token FROM accounts_providercredential")  # (the one)
        access, refresh = cursor.fetchone()
    assert own.decrypt(access.encode()) == b"a-token" and refresh == ""
