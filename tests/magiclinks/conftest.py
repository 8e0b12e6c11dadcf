import pytest

from .helpers import provider_app
from .oauth_server import OAuthServer, start_oauth_server


@pytest.fixture
def oauth_server(settings):
    """A real OAuth 2.0 server on 127.0.0.1 (its token URL is on loopback, so private URLs are allowed)."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
    state = OAuthServer()
    server = start_oauth_server(state)
    yield state
    server.shutdown()
    server.server_close()


@pytest.fixture
def oauth_app(owner, oauth_server):
    """The owner's ProviderA application, pointing at the loopback OAuth server."""
    return provider_app(
        owner,
        "ProviderA",
        client_id=oauth_server.client_id,
        client_secret=oauth_server.client_secret,
        authorize_url=oauth_server.authorize_url,
        token_url=oauth_server.token_url,
    )
