"""Provider token URLs: the private-address rule holds however the URL is spelled and whatever DNS answers after
the check; odd `expires_in` answers of a token endpoint never break the OAuth callback. Against the real loopback
OAuth server of these tests."""

from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.utils import timezone

from magiclinks import services
from magiclinks.models import MagicLink
from platform_site.accounts.models import ProviderApplication, ProviderCredential
from tests.tenancy import assert_problem
from tests.webhooks.fake_dns import PUBLIC_ADDRESS, FakeDns
from tests.webhooks.test_url_safety import HIDDEN_PRIVATE_URLS

from .helpers import API, APPLICATION_BODY
from .test_pages import connect, make_link

URL = f"{API}/provider-applications"
BODY = APPLICATION_BODY
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]
TEN_YEARS = timedelta(days=3650)  # the longest token lifetime we keep (decisions.md)


@pytest.fixture
def dns(monkeypatch):
    return FakeDns({"example.com": [PUBLIC_ADDRESS], "auth.example.com": [PUBLIC_ADDRESS]}).install(monkeypatch)


@pytest.mark.parametrize("url", HIDDEN_PRIVATE_URLS)
def test_token_urls_that_hide_a_private_host_are_refused(api_client, settings, dns, url):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    body = assert_problem(api_client.post(URL, BODY | {"tokenUrl": url}, format="json"), 400)
    assert body["errorKey"] in ("providerUrlNotAllowed", "validation"), body
    assert [e["field"] for e in body["fieldErrors"]] == ["tokenUrl"]
    assert not ProviderApplication.objects.exists()


@pytest.mark.parametrize("url", ["http://127.0.0.1:8113\\@example.com/token", "http://127.0.0.1:8113@example.com/t"])
def test_the_bypass_token_urls_get_the_url_not_allowed_problem(api_client, settings, dns, url):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    body = assert_problem(api_client.post(URL, BODY | {"tokenUrl": url}, format="json"), 400, "providerUrlNotAllowed")
    assert body["fieldErrors"][0]["field"] == "tokenUrl"
    assert api_client.post(URL, BODY, format="json").status_code == 201  # a public token URL is still fine


def test_a_stored_token_url_that_hides_a_private_host_is_refused_at_the_callback(
    client, core_user, oauth_server, oauth_app, settings, dns
):
    # Given an application whose stored token URL reaches the loopback provider through the backslash trick
    settings.PUBLIC_BASE_URL = "http://testserver"
    port = urlsplit(oauth_server.base_url).port
    ProviderApplication.objects.filter(pk=oauth_app.pk).update(token_url=f"http://127.0.0.1:{port}\\@example.com/token")
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False  # the consent page itself is on loopback, checked only now
    # When the user comes back from the provider
    response, _ = connect(client, url)
    # Then the token URL is refused: no token request reached the loopback server
    assert response.status_code == 502 and "backslashes" in response.content.decode()
    assert oauth_server.token_requests == []
    assert not ProviderCredential.objects.exists()


def test_a_refresh_connects_only_to_the_address_that_was_checked(
    client, core_user, oauth_server, oauth_app, settings, dns
):
    # Given a connected user, and a token URL name that answers public to the check, then loopback (rebinding)
    settings.PUBLIC_BASE_URL = "http://testserver"
    settings.PROVIDER_TOKEN_TIMEOUT_SECONDS = 1
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    assert connect(client, url)[0].status_code == 200
    port = urlsplit(oauth_server.base_url).port
    ProviderApplication.objects.filter(pk=oauth_app.pk).update(token_url=f"http://rebind.test:{port}/token")
    # (as if connected there: a credential is only refreshed at the server that issued it)
    ProviderCredential.objects.filter(core_user=core_user).update(token_server=f"http://rebind.test:{port}")
    dns.answers["rebind.test"] = [PUBLIC_ADDRESS, "127.0.0.1"]
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = False
    # When the tokens are refreshed
    credential = ProviderCredential.objects.get(core_user=core_user)
    assert services.credential_refresh(credential=credential) is None
    # Then the request went to the checked public address only, never to the loopback provider
    assert dns.lookups["rebind.test"] == 1
    assert [r["grant_type"] for r in oauth_server.token_requests] == ["authorization_code"]
    credential.refresh_from_db()
    assert credential.status == "UNAUTHENTICATED"
    # Said plainly, naming the address tried (unreachable or silent, depending on the machine's network)
    reasons = ("no answer in time", "Network is unreachable", "No route to host", "Connection refused")
    said = [f"ProviderA could not be reached: {reason} (to {PUBLIC_ADDRESS})." for reason in reasons]
    assert credential.status_message in said


@pytest.mark.parametrize(
    ("expires_in", "expected"),
    [
        (3600, timedelta(seconds=3600)),
        (1e300, TEN_YEARS),
        (10**40, TEN_YEARS),
        (float("inf"), TEN_YEARS),
        (float("nan"), None),
        (-60, None),
        (0, None),
        (True, None),
        ("3600", timedelta(seconds=3600)),  # some providers send a string of digits
        (" 3599 ", timedelta(seconds=3599)),
        ("9" * 5000, TEN_YEARS),
        ("1e3", None),
        ("-60", None),
        ("soon", None),
        (None, None),
        ([3600], None),
    ],
)
def test_any_expires_in_of_the_token_answer_connects(
    client, core_user, oauth_server, oauth_app, settings, expires_in, expected
):
    # Given a provider whose token answer says `expires_in`
    settings.PUBLIC_BASE_URL = "http://testserver"
    oauth_server.expires_in = expires_in
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    # When the user connects
    before = timezone.now()
    response, _ = connect(client, url)
    # Then the connection is made; an absurd lifetime is capped, a meaningless one is an unknown expiry
    assert response.status_code == 200, response.content[:300]
    credential = ProviderCredential.objects.get(core_user=core_user)
    assert credential.status == "AUTHENTICATED"
    if expected is None:
        assert credential.expires_at is None
    else:
        assert before + expected - timedelta(seconds=1) <= credential.expires_at <= timezone.now() + expected


def test_nul_characters_and_lone_surrogates_in_token_answers_are_not_stored(
    client, core_user, oauth_server, oauth_app, settings
):
    """PostgreSQL stores neither in text: the callback was a 500, for a good answer and for a refusal alike."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    oauth_server.answer_extra = {"token_type": "Bea\u0000rer", "scope": "files\u0000 \ud800offline_access"}
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, url)
    assert response.status_code == 200, response.content[:300]
    credential = ProviderCredential.objects.get(core_user=core_user)
    assert (credential.status, credential.token_type, credential.scope) == (
        "AUTHENTICATED",
        "Bearer",
        "files offline_access",
    )

    oauth_server.fail_token, oauth_server.fail_description = True, "bad\u0000 grant \udfff"
    response, _ = connect(client, url)
    assert response.status_code == 502
    credential.refresh_from_db()
    assert credential.status == "UNAUTHENTICATED" and credential.status_message.endswith("bad grant ")


@pytest.mark.parametrize("key", ["access_token", "refresh_token"])
def test_a_token_holding_a_lone_surrogate_is_a_failed_connection(
    client, core_user, oauth_server, oauth_app, settings, key
):
    """A token is kept as sent; one with no UTF-8 cannot be (its encryption was a 500)."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    oauth_server.answer_extra = {key: "tok\ud800en"}
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, url)
    assert response.status_code == 502
    assert "answered a token that is not text" in response.content.decode()
    assert not ProviderCredential.objects.filter(core_user=core_user, status="AUTHENTICATED").exists()


@pytest.mark.parametrize(
    "raw, says",
    [
        (b"[" * 100_000 + b"]" * 100_000, "answered without an access token"),  # deeper than the parser goes
        (b'{"access_token": "t"' + b" " * (300 * 1024) + b"}", "answered more than 256 KiB"),
        (b'"access_token"', "answered without an access token"),
        (b"\xff\xfe{", "answered without an access token"),
        (b'{"access_token": "", "token_type": "Bearer"}', "answered without an access token"),
        (b'{"access_token": 42, "token_type": "Bearer"}', "answered without an access token"),
    ],
    ids=["nested", "too-large", "not-an-object", "not-json", "empty-token", "number-token"],
)
def test_a_token_answer_that_is_no_token_object_is_a_failed_connection(
    client, core_user, oauth_server, oauth_app, settings, raw, says
):
    """A JSON array nested 100,000 deep made the callback a 500 (RecursionError); an answer of any size was read
    whole into memory."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    oauth_server.raw_answer = raw
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, url)
    assert response.status_code == 502
    assert says in response.content.decode()
    assert len(oauth_server.token_requests) == 1
    assert not ProviderCredential.objects.filter(core_user=core_user, status="AUTHENTICATED").exists()


@pytest.mark.parametrize("status", [201, 302, 400])
def test_a_token_answer_of_any_status_but_200s_is_refused_whatever_its_body(
    client, core_user, oauth_server, oauth_app, settings, status
):
    """A redirect (not followed) or an error holding a token-shaped body is no token answer; a 2xx one is."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    oauth_server.good_status = status
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, url)
    connected = ProviderCredential.objects.filter(core_user=core_user, status="AUTHENTICATED").exists()
    if status < 300:
        assert connected, response.content.decode()[:500]
    else:
        assert response.status_code == 502
        assert f"refused the token request: HTTP {status}" in response.content.decode()
        assert not connected
