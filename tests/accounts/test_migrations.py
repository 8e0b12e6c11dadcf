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
