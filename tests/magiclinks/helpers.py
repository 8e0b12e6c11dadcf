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


def oauth_server_app(owner, server):
    """The owner's ProviderA application, pointing at the loopback OAuth `server` with its client id and secret."""
    return provider_app(
        owner,
        "ProviderA",
        client_id=server.client_id,
        client_secret=server.client_secret,
        authorize_url=server.authorize_url,
        token_url=server.token_url,
    )


def body_for(kind: str, **overrides) -> dict:
    """A valid creation body for an existing user."""
    base = {"provider": {"allowedProviders": ["ProviderA"]}, "authentication": {"provider": "ProviderA"}}
    return base.get(kind, {}) | overrides


def create_link(client, core_user, kind: str, **overrides):
    return client.post(f"{API}/magic-link/users/{core_user.id}/{kind}", body_for(kind, **overrides), format="json")


def token_of(link_url: str) -> str:
    return link_url.rstrip("/").rsplit("/", 1)[1]


def contrast_ratio(first: tuple[int, int, int], second: tuple[int, int, int]) -> float:
    """WCAG 2 contrast ratio of two sRGB colours (0-255 channels), computed here rather than taken from the code."""

    def luminance(rgb):
        linear = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    lighter, darker = sorted((luminance(first), luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def rgb(hex_color: str) -> tuple[int, int, int]:
    return tuple(int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
