import pytest

from .helpers import oauth_server_app
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
    return oauth_server_app(owner, oauth_server)
