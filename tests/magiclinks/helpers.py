"""Shared helpers of the magic link tests."""

from platform_site.accounts.services import provider_application_create

API = "/services/widgets/api"
# A valid `POST .../provider-applications` body.
APPLICATION_BODY = {
    "provider": "ProviderA",
    "clientId": "my-client",
    "clientSecret": "top-secret-value",
    "authorizeUrl": "https://auth.example.com/oauth/authorize",
    "tokenUrl": "https://auth.example.com/oauth/token",
    "scopes": ["files", "offline_access"],
}
KINDS = {"provider": "PROVIDER", "authentication": "AUTHENTICATION", "file-upload": "FILEUPLOAD"}


def provider_app(owner, provider="ProviderA", *, base_url="https://auth.example.com", **overrides):
    """The owner's OAuth application at `provider` (needed before provider and authentication links)."""
    values = {
        "client_id": f"client-{provider}",
        "client_secret": "s3cret-value",
        "authorize_url": f"{base_url}/authorize",
        "token_url": f"{base_url}/token",
        "scopes": ["files", "offline_access"],
    } | overrides
    return provider_application_create(owner=owner, provider=provider, **values)


def body_for(kind: str, **overrides) -> dict:
    """A valid creation body for an existing user."""
    base = {"provider": {"allowedProviders": ["ProviderA"]}, "authentication": {"provider": "ProviderA"}}
    return base.get(kind, {}) | overrides


def create_link(client, core_user, kind: str, **overrides):
    return client.post(f"{API}/magic-link/users/{core_user.id}/{kind}", body_for(kind, **overrides), format="json")


def token_of(link_url: str) -> str:
    return link_url.rstrip("/").rsplit("/", 1)[1]
