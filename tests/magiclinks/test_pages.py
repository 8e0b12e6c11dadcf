"""The end-user pages at `/links/<token>` through HTTP: branding, visit counting, unknown / expired /
revoked links, the OAuth 2.0 authorization-code flow against a real loopback server, disconnecting,
credentialsUnauthenticated, and uploads into the batch pipeline."""

import io
import re
import uuid
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pytest
import requests
from django.db import connection
from django.db.models import F
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from magiclinks import services
from magiclinks.models import MagicLink
from magiclinks.services import token_hash
from platform_site.accounts.models import ProviderCredential
from tests.tenancy import assert_problem

from .helpers import contrast_ratio, oauth_server_app, provider_app, rgb
from .oauth_server import OAuthServer, start_oauth_server

# (all on the embedded SpatiaLite default too: `make run` serves these pages)
pytestmark = [pytest.mark.django_db, pytest.mark.embedded]
SETTINGS = {
    "backgroundColor": "#0A3D2E",
    "companyName": "Acme Agronomy",
    "companyLogo": "https://cdn.example.com/logo.png",
    "headerImage": "https://cdn.example.com/header.jpg",
    "showLeafUserName": True,
}


def make_link(core_user, widget, **values):
    link, token = services.magic_link_create(core_user=core_user, widget=widget, **values)
    return link, f"/links/{token}"


def provider_answer(client, url, provider="ProviderA", allow=True):
    """Click "Connect" and let the loopback provider answer: (path, query) of its redirect back to our callback, not
    followed yet, and the Connect click's response."""
    started = client.get(f"{url}/connect/{provider}")
    assert started.status_code == 302, started.content[:300]
    consent = requests.get(started["Location"], timeout=5)
    assert consent.status_code == 200
    choice = "allow" if allow else "deny"
    back = urlsplit(consent.text.split(f"id='{choice}' href='")[1].split("'")[0].replace("&amp;", "&"))
    return (back.path, parse_qs(back.query)), started


def connect(client, url, provider="ProviderA", allow=True, meanwhile=None):
    """Click "Connect", let the loopback provider answer, and follow its redirect back to our callback
    (`meanwhile()` is called while the user is at the provider)."""
    (path, query), started = provider_answer(client, url, provider, allow)
    if meanwhile is not None:
        meanwhile()
    return client.get(path, query), started


def test_upload_page_is_branded_counts_visits_and_is_private(client, core_user):
    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD, settings=SETTINGS)
    response = client.get(url)
    assert response.status_code == 200
    page = response.content.decode()
    assert "Acme Agronomy" in page and "https://cdn.example.com/logo.png" in page and "header.jpg" in page
    assert "--page-bg: #0A3D2E; --page-fg: #FFFFFF" in page  # white text on the dark green
    # The logo beside the company's name is not read out again ("Acme Agronomy logo, Acme Agronomy")
    assert re.search(r'<img class="brand-logo" src="https://cdn.example.com/logo.png" alt="" ', page)
    assert core_user.name in page
    assert '<label for="file">' in page and 'name="provider"' in page
    assert response["Referrer-Policy"] == "same-origin" and "no-store" in response["Cache-Control"]
    policy = dict(directive.split(" ", 1) for directive in response["Content-Security-Policy"].split("; "))
    assert policy["script-src"] == "'self'" and policy["frame-ancestors"] == "'none'"
    assert policy["form-action"] == "'self'" and policy["default-src"] == "'self'"
    client.get(url)
    link.refresh_from_db()
    assert link.usage_count == 2 and link.last_accessed_at is not None
    # A HEAD (a link checker, a chat preview) is no visit
    assert client.head(url).status_code == 200
    link.refresh_from_db()
    assert link.usage_count == 2


def test_the_user_name_shows_only_when_asked(client, core_user):
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD, settings={"showLeafUserName": False})
    page = client.get(url).content.decode()
    assert core_user.name not in page
    assert "--page-bg: #F5F5F5; --page-fg: #000000" in page
    # Shown, it says whose account the page is for: the end user signed in nowhere ("Signed in as" said they had)
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD, settings={"showLeafUserName": True})
    page = client.get(url).content.decode()
    assert f"For <strong>{core_user.name}</strong>" in page and "Signed in" not in page


def test_unknown_expired_and_revoked_links_have_clear_pages(client, core_user):
    assert client.get("/links/" + "x" * 43).status_code == 404
    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    MagicLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = client.get(url)
    assert expired.status_code == 410 and "This link has expired" in expired.content.decode()
    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    services.magic_link_delete(link=link)
    revoked = client.get(url)
    assert revoked.status_code == 410 and "no longer valid" in revoked.content.decode()
    assert client.post(f"{url}/upload", {}).status_code == 410
    link.refresh_from_db()
    assert link.usage_count == 0


def test_a_deactivated_owners_links_are_unavailable_until_it_is_reactivated(client, owner, core_user):
    """The owner's API tokens are refused while it is inactive; its links were still opened, counted and took
    uploads."""
    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    batch_url = f"{url}/batches/{uuid.uuid4()}"
    type(owner).objects.filter(pk=owner.pk).update(is_active=False)
    page = client.get(url)
    assert page.status_code == 403 and "This link is not available" in page.content.decode()
    assert client.post(f"{url}/upload", {"file": _zip_file(b"PK\x05\x06" + bytes(18))}).status_code == 403
    assert client.get(batch_url).status_code == 403
    assert client.get(f"{batch_url}/status").status_code == 403  # the status page's polling
    assert client.head(url).status_code == 403
    provider_app(owner, "ProviderA")
    _provider_link, provider_url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    token = provider_url.rsplit("/", 1)[1]
    assert client.get(reverse("magiclink-connect", args=[token, "ProviderA"])).status_code == 403
    assert client.post(reverse("magiclink-disconnect", args=[token])).status_code == 403
    link.refresh_from_db()
    assert link.usage_count == 0
    type(owner).objects.filter(pk=owner.pk).update(is_active=True)
    assert client.get(url).status_code == 200


@pytest.fixture
def connected_and_watched(client, owner, core_user, oauth_server, oauth_app, settings, webhook_receiver, subscribe):
    """Connects the core user to ProviderA through a provider link, its owner listening for
    credentialsUnauthenticated; returns the link's URL."""

    def connected() -> str:
        settings.PUBLIC_BASE_URL = "http://testserver"
        subscribe(owner, webhook_receiver, ["credentialsUnauthenticated"])
        _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
        connect(client, url)
        return url

    return connected


def test_provider_page_offers_one_button_per_allowed_provider(client, owner, core_user):
    for p in ("ProviderA", "ProviderB"):
        provider_app(owner, p)
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderB", "ProviderA"])
    page = client.get(url).content.decode()
    assert page.index("Connect ProviderB") < page.index("Connect ProviderA")
    assert client.get(f"{url}/connect/ProviderC").status_code == 404
    _link, auth_url = make_link(core_user, MagicLink.Widget.AUTHENTICATION, provider="ProviderB")
    page = client.get(auth_url).content.decode()
    assert "Connect ProviderB" in page and "Connect ProviderA" not in page


def test_connect_redirects_to_the_provider_with_state_and_pkce(client, owner, core_user, settings):
    settings.PUBLIC_BASE_URL = "https://platform.example.com"
    provider_app(owner, "ProviderA", base_url="https://auth.example.com")
    _link, url = make_link(core_user, MagicLink.Widget.AUTHENTICATION, provider="ProviderA")
    response = client.get(f"{url}/connect/ProviderA")
    assert response.status_code == 302
    target = urlsplit(response["Location"])
    assert (target.scheme, target.netloc, target.path) == ("https", "auth.example.com", "/authorize")
    query = {k: v[0] for k, v in parse_qs(target.query).items()}
    assert query["response_type"] == "code" and query["client_id"] == "client-ProviderA"
    assert query["redirect_uri"] == "https://platform.example.com/links/oauth/callback"
    assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
    assert query["scope"] == "files offline_access" and len(query["state"]) >= 43
    assert response.cookies["magiclink_browser"]["httponly"] and response.cookies["magiclink_browser"]["samesite"]


def test_oauth_flow_stores_encrypted_credentials(client, core_user, oauth_server, oauth_app, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, url)
    assert response.status_code == 200, re.findall(r"outcome\">([^<]*)", response.content.decode())
    page = response.content.decode()
    assert "You are connected to ProviderA." in page and "Back to your providers" in page
    credential = ProviderCredential.objects.get(core_user=core_user, provider="ProviderA")
    assert credential.status == "AUTHENTICATED" and credential.access_token.startswith("access-")
    assert credential.refresh_token in oauth_server.refresh_tokens
    assert credential.expires_at > timezone.now() + timedelta(minutes=59)
    with connection.cursor() as cursor:
        cursor.execute("SELECT access_token, refresh_token FROM accounts_providercredential")
        [(access, refresh)] = cursor.fetchall()
    assert credential.access_token not in access and credential.refresh_token not in refresh
    # The link's page now shows the connection.
    assert 'data-state="authenticated"' in client.get(url).content.decode()
    # The state was single use.
    [token_request] = oauth_server.token_requests
    assert token_request["grant_type"] == "authorization_code"


def test_a_callback_is_refused_for_unknown_reused_or_foreign_state(
    client, core_user, oauth_server, oauth_app, settings
):
    settings.PUBLIC_BASE_URL = "http://testserver"
    assert client.get("/links/oauth/callback", {"state": "forged", "code": "x"}).status_code == 400
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    started = client.get(f"{url}/connect/ProviderA")
    state = parse_qs(urlsplit(started["Location"]).query)["state"][0]
    # Another browser (without this browser's cookie) cannot complete it (login CSRF).
    from django.test import Client

    stranger = Client().get("/links/oauth/callback", {"state": state, "code": "x"})
    assert stranger.status_code == 400 and "another browser" in stranger.content.decode()
    # Nor can one with a sign-in of its own under way (its own browser cookie)
    other_browser = Client()
    assert other_browser.get(f"{url}/connect/ProviderA").status_code == 302
    foreign = other_browser.get("/links/oauth/callback", {"state": state, "code": "x"})
    assert foreign.status_code == 400 and "another browser" in foreign.content.decode()
    assert not ProviderCredential.objects.exists()
    assert oauth_server.token_requests == []


def test_a_link_keeps_only_its_latest_sign_ins_and_none_past_their_lifetime(
    client, core_user, oauth_server, oauth_app, settings
):
    """Each Connect click stored a sign-in (its PKCE verifier too) for good: 300 clicks on a link were 300 rows."""
    from magiclinks.models import LinkAuthorization
    from magiclinks.services.connections import AUTHORIZATIONS_PER_LINK, link_authorizations_sweep

    settings.PUBLIC_BASE_URL = "http://testserver"
    link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    states = []
    for _ in range(AUTHORIZATIONS_PER_LINK + 15):
        started = client.get(f"{url}/connect/ProviderA")
        states.append(parse_qs(urlsplit(started["Location"]).query)["state"][0])
    assert LinkAuthorization.objects.filter(link=link).count() == AUTHORIZATIONS_PER_LINK
    # The oldest are forgotten; the latest completes
    forgotten = client.get("/links/oauth/callback", {"state": states[0], "code": "x"})
    assert forgotten.status_code == 400 and "not known" in forgotten.content.decode()
    consent = requests.get(started["Location"], timeout=5)
    back = urlsplit(consent.text.split("id='allow' href='")[1].split("'")[0].replace("&amp;", "&"))
    assert "You are connected to ProviderA." in client.get(back.path, parse_qs(back.query)).content.decode()
    # Past their lifetime, the sweep forgets them all (used or not); another link's, still live, stay
    other, other_url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    client.get(f"{other_url}/connect/ProviderA")
    LinkAuthorization.objects.filter(link=link).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert link_authorizations_sweep() == AUTHORIZATIONS_PER_LINK
    assert list(LinkAuthorization.objects.values_list("link_id", flat=True)) == [other.pk]


def test_a_callback_leads_back_only_to_its_own_link(client, core_user, oauth_server, oauth_app, settings):
    """Two links open in one browser: the way back after the first one's sign-in is not the second link's page."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    _first, first_url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    _second, second_url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    (path, query), _ = provider_answer(client, first_url)
    assert client.get(f"{second_url}/connect/ProviderA").status_code == 302  # the browser's cookie is now the second's
    page = client.get(path, query)
    assert page.status_code == 200 and "You are connected to ProviderA." in page.content.decode()
    assert second_url not in page.content.decode() and "Back to your providers" not in page.content.decode()


def test_a_callback_answered_again_is_refused_and_exchanges_nothing(
    client, core_user, oauth_server, oauth_app, settings
):
    """The provider's redirect replayed (the browser's back button, a leaked URL): the state is single-use."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    (path, query), _ = provider_answer(client, url)
    assert client.get(path, query).status_code == 200
    again = client.get(path, query)
    assert again.status_code == 400 and "already used" in again.content.decode()
    assert len(oauth_server.token_requests) == 1 and ProviderCredential.objects.count() == 1


def test_a_sign_in_that_took_longer_than_its_ten_minutes_connects_nothing(
    client, core_user, oauth_server, oauth_app, settings
):
    from magiclinks.models import LinkAuthorization

    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])

    def eleven_minutes_at_the_provider():
        LinkAuthorization.objects.update(expires_at=F("expires_at") - timedelta(minutes=11))

    response, _ = connect(client, url, meanwhile=eleven_minutes_at_the_provider)
    assert response.status_code == 400 and "This sign-in attempt took too long." in response.content.decode()
    assert oauth_server.token_requests == [] and not ProviderCredential.objects.exists()


@pytest.mark.parametrize(
    "meanwhile, status, message",
    [
        ("expired", 410, "This link has expired."),
        ("revoked", 410, "This link has been revoked."),
        ("owner deactivated", 403, "The service that sent this link is not available"),
    ],
)
def test_a_link_that_expires_or_is_revoked_at_the_provider_connects_nothing(
    client, owner, core_user, oauth_server, oauth_app, settings, meanwhile, status, message
):
    """An expired link's page was 410, yet a sign-in started before it expired still connected the user. The same
    for a link whose API owner was deactivated meanwhile (its tokens are refused)."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])

    def change():
        if meanwhile == "owner deactivated":
            type(owner).objects.filter(pk=owner.pk).update(is_active=False)
        else:
            field = {"expired": "expires_at", "revoked": "deleted_at"}[meanwhile]
            MagicLink.objects.filter(pk=link.pk).update(**{field: timezone.now()})

    response, _ = connect(client, url, meanwhile=change)
    assert response.status_code == status
    page = response.content.decode()
    assert message in page
    # (no Connect button nor way back to a page that would answer the same)
    assert "/connect/" not in page and "Back to your providers" not in page
    assert oauth_server.token_requests == []  # the code was never exchanged
    assert not ProviderCredential.objects.exists()


def test_the_user_may_deny_access(client, core_user, oauth_server, oauth_app, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, url, allow=False)
    assert response.status_code == 400
    assert "did not grant access (access_denied)" in response.content.decode()
    assert not ProviderCredential.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_failed_token_exchange_emits_credentials_unauthenticated(
    connected_and_watched, client, core_user, oauth_server, webhook_receiver
):
    url = connected_and_watched()  # a first, good connection
    oauth_server.fail_token = True
    response, _ = connect(client, url)
    assert response.status_code == 502
    assert "The grant was revoked." in response.content.decode()
    credential = ProviderCredential.objects.get(core_user=core_user)
    assert credential.status == "UNAUTHENTICATED" and "revoked" in credential.status_message
    [event] = [e for e in webhook_receiver.wait_for(1) and webhook_receiver.events()]
    assert event["type"] == "credentialsUnauthenticated"
    assert event["coreUserId"] == str(core_user.id) and event["provider"] == "ProviderA"
    assert "The grant was revoked." in event["message"]
    assert 'data-state="unauthenticated"' in client.get(url).content.decode()


@pytest.mark.django_db(transaction=True)
def test_refresh_renews_tokens_or_emits_credentials_unauthenticated(
    connected_and_watched, core_user, oauth_server, webhook_receiver
):
    from magiclinks.tasks import magiclinks_credential_refresh

    connected_and_watched()
    first = ProviderCredential.objects.get(core_user=core_user)
    magiclinks_credential_refresh.delay(str(first.pk))
    renewed = ProviderCredential.objects.get(pk=first.pk)
    assert renewed.access_token != first.access_token and renewed.status == "AUTHENTICATED"
    assert webhook_receiver.received == []
    oauth_server.fail_token = True
    magiclinks_credential_refresh.delay(str(first.pk))
    assert ProviderCredential.objects.get(pk=first.pk).status == "UNAUTHENTICATED"
    [event] = webhook_receiver.wait_for(1) and webhook_receiver.events()
    assert (event["type"], event["provider"]) == ("credentialsUnauthenticated", "ProviderA")


@pytest.mark.django_db(transaction=True)
def test_a_client_id_and_secret_of_any_characters_authenticate_as_rfc_6749_encodes_them(
    client, owner, core_user, oauth_server, settings
):
    """They were sent raw in HTTP Basic: an id holding ':' or a secret holding '+' or '%' was read otherwise by an
    authorization server decoding them (RFC 6749 2.3.1), and one beyond Latin-1 was a 500 at the callback (the debug
    page of `make run` showed the secret) and an error in every refresh."""
    from magiclinks.tasks import magiclinks_credential_refresh

    settings.PUBLIC_BASE_URL = "http://testserver"
    oauth_server.client_id, oauth_server.client_secret = "client:ü 1", "s+e%c r€客:"
    oauth_server_app(owner, oauth_server)
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, url)
    assert response.status_code == 200, response.content[:300]
    first = ProviderCredential.objects.get(core_user=core_user)
    assert first.status == "AUTHENTICATED"
    magiclinks_credential_refresh.delay(str(first.pk))
    renewed = ProviderCredential.objects.get(pk=first.pk)
    assert renewed.status == "AUTHENTICATED" and renewed.access_token != first.access_token


@pytest.mark.django_db(transaction=True)
def test_a_provider_that_grants_less_than_asked_emits_credentials_limited_permission(
    client, owner, core_user, oauth_server, oauth_app, settings, webhook_receiver, subscribe
):
    """The event was accepted at webhook registration but never sent: a narrower grant went unnoticed."""
    from magiclinks.tasks import magiclinks_credential_refresh

    settings.PUBLIC_BASE_URL = "http://testserver"
    subscribe(owner, webhook_receiver, ["credentialsLimitedPermission"])
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    # Given a provider that grants "files" but not "offline_access" of the application's scopes
    oauth_server.answer_extra = {"scope": "profile files"}
    # When the user connects: connected, told what is missing, and the API owner hears of it
    response, _ = connect(client, url)
    assert response.status_code == 200
    assert "It did not grant everything asked for (missing: offline_access)." in response.content.decode()
    credential = ProviderCredential.objects.get(core_user=core_user)
    assert (credential.status, credential.scope) == ("AUTHENTICATED", "profile files")
    [event] = webhook_receiver.wait_for(1) and webhook_receiver.events()
    assert (event["type"], event["coreUserId"], event["provider"]) == (
        "credentialsLimitedPermission",
        str(core_user.id),
        "ProviderA",
    )
    assert event["message"] == "ProviderA did not grant: offline_access."
    # A refresh granting the same says nothing again; nor does one granting everything (or not saying: RFC 6749
    # 5.1, the scope asked for); one granting still less does
    for answer in ({"scope": "profile files"}, {"scope": "files offline_access"}, {"scope": ""}):
        oauth_server.answer_extra = answer
        magiclinks_credential_refresh.delay(str(credential.pk))
        assert len(webhook_receiver.received) == 1, answer
    oauth_server.answer_extra = {"scope": "profile"}
    magiclinks_credential_refresh.delay(str(credential.pk))
    assert [e["message"] for e in webhook_receiver.wait_for(2) and webhook_receiver.events()][1:] == [
        "ProviderA did not grant: files offline_access."
    ]


@pytest.mark.django_db(transaction=True)
def test_the_sweep_refreshes_only_credentials_about_to_expire(
    client, core_user, oauth_server, oauth_app, settings, monkeypatch
):
    from magiclinks import tasks
    from magiclinks.services import credentials_refresh_sweep

    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    connect(client, url)
    first = ProviderCredential.objects.get(core_user=core_user)
    # Fresh tokens (the server grants an hour, more than CREDENTIAL_REFRESH_AHEAD_SECONDS ahead): nothing to do
    settings.CREDENTIAL_REFRESH_AHEAD_SECONDS = 600
    assert credentials_refresh_sweep() == 0
    assert ProviderCredential.objects.get(pk=first.pk).access_token == first.access_token
    # About to expire: refreshed, with a new expiry, so the next sweep leaves it alone
    ProviderCredential.objects.filter(pk=first.pk).update(expires_at=timezone.now() + timedelta(seconds=60))
    assert credentials_refresh_sweep() == 1
    renewed = ProviderCredential.objects.get(pk=first.pk)
    assert renewed.access_token != first.access_token and renewed.status == "AUTHENTICATED"
    assert renewed.expires_at > timezone.now() + timedelta(seconds=600)
    assert credentials_refresh_sweep() == 0
    # A refresh sent twice (two sweeps before the worker ran) is done once: the second finds it no longer due
    ProviderCredential.objects.filter(pk=first.pk).update(expires_at=timezone.now() + timedelta(seconds=60))
    with monkeypatch.context() as patch:
        queued = []
        patch.setattr(tasks.magiclinks_credential_refresh, "delay", lambda *a, **k: queued.append((a, k)))
        credentials_refresh_sweep()
        credentials_refresh_sweep()
    for args, kwargs in queued:
        tasks.magiclinks_credential_refresh(*args, **kwargs)
    refreshes = [form for form in oauth_server.token_requests if form.get("grant_type") == "refresh_token"]
    assert len(queued) == 2 and len(refreshes) == 2  # the one above, then one of the two queued


@pytest.mark.django_db(transaction=True)
def test_a_credential_is_refreshed_only_at_the_token_server_that_issued_it(
    connected_and_watched, client, owner, core_user, oauth_server, oauth_app, webhook_receiver
):
    """A token URL moved to another server (a PUT with the secret given again) sent every connected user's refresh
    token there at the next refresh: a refresh token is the issuing server's, and nobody else's to have."""
    from magiclinks.tasks import magiclinks_credential_refresh
    from platform_site.accounts.services import provider_application_update

    url = connected_and_watched()
    credential = ProviderCredential.objects.get(core_user=core_user)
    assert credential.token_server == f"http://127.0.0.1:{urlsplit(oauth_server.base_url).port}"
    elsewhere = OAuthServer()
    server = start_oauth_server(elsewhere)
    try:
        # Another path on the same server: still the issuing server, refreshed there
        provider_application_update(application=oauth_app, token_url=f"{oauth_server.base_url}/token?v=2")
        magiclinks_credential_refresh(str(credential.pk))
        assert ProviderCredential.objects.get(pk=credential.pk).status == "AUTHENTICATED"
        assert _refresh_requests(oauth_server) == 1

        provider_application_update(
            application=oauth_app, token_url=elsewhere.token_url, client_secret=elsewhere.client_secret
        )
        magiclinks_credential_refresh(str(credential.pk))
        assert elsewhere.token_requests == [] and _refresh_requests(oauth_server) == 1  # sent nowhere
        refused = ProviderCredential.objects.get(pk=credential.pk)
        assert refused.status == "UNAUTHENTICATED"
        assert refused.status_message == (
            "The ProviderA application's token URL now names another server than the one this user connected at: "
            "connect again."
        )
        [event] = webhook_receiver.wait_for(1) and webhook_receiver.events()
        assert (event["type"], event["message"]) == ("credentialsUnauthenticated", refused.status_message)

        # Connected again, at the new server: refreshed there
        oauth_app.authorize_url = elsewhere.authorize_url
        oauth_app.save()
        connect(client, url)
        again = ProviderCredential.objects.get(pk=credential.pk)
        assert (
            again.status == "AUTHENTICATED"
            and again.token_server == f"http://127.0.0.1:{urlsplit(elsewhere.base_url).port}"
        )
        magiclinks_credential_refresh(str(credential.pk))
        assert _refresh_requests(elsewhere) == 1
        assert ProviderCredential.objects.get(pk=credential.pk).status == "AUTHENTICATED"
    finally:
        server.shutdown()
        server.server_close()


def test_disconnect_only_when_the_link_allows_it(client, core_user, oauth_server, oauth_app, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, closed_url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    response, _ = connect(client, closed_url)
    assert "Disconnect ProviderA" not in response.content.decode()
    refused = client.post(f"{closed_url}/disconnect", {"provider": "ProviderA"})
    # (the link is fine: its page is offered again, not "Link not found")
    assert refused.status_code == 400
    page = refused.content.decode()
    assert "This link does not offer to disconnect from ProviderA." in page and "Link not found" not in page
    assert f'href="{closed_url}"' in page
    assert ProviderCredential.objects.filter(core_user=core_user).exists()

    _link, url = make_link(
        core_user, MagicLink.Widget.AUTHENTICATION, provider="ProviderA", settings={"disconnectedEnabled": True}
    )
    response, _ = connect(client, url)
    assert "Disconnect ProviderA" in response.content.decode()
    done = client.post(f"{url}/disconnect", {"provider": "ProviderA"})
    assert done.status_code == 200 and "You are disconnected from ProviderA." in done.content.decode()
    assert not ProviderCredential.objects.filter(core_user=core_user).exists()
    # Again (another tab, a reload): nothing was connected, and the page says so
    again = client.post(f"{url}/disconnect", {"provider": "ProviderA"})
    assert again.status_code == 200 and "You were not connected to ProviderA." in again.content.decode()


def test_disconnect_needs_the_csrf_token(core_user, oauth_app):
    from django.test import Client

    _link, url = make_link(
        core_user, MagicLink.Widget.AUTHENTICATION, provider="ProviderA", settings={"disconnectedEnabled": True}
    )
    refused = Client(enforce_csrf_checks=True).post(f"{url}/disconnect", {"provider": "ProviderA"})
    assert refused.status_code == 403
    # The link's own page says what to do and leads back (Django's page asked to turn DEBUG on)
    page = refused.content.decode()
    assert "This form has expired" in page and f'href="{url}"' in page and "DEBUG" not in page
    assert f'<p><a href="{url}">Back to your providers</a></p>' in page


def test_the_admin_keeps_djangos_csrf_page(core_user):
    from django.test import Client

    refused = Client(enforce_csrf_checks=True).post("/admin/login/", {"username": "x", "password": "y"})
    assert refused.status_code == 403 and "CSRF verification failed" in refused.content.decode()


def _zip_file(data: bytes, name="upload.zip"):
    file = io.BytesIO(data)
    file.name = name
    return file


@pytest.mark.django_db(transaction=True)
def test_upload_goes_into_the_batch_pipeline_and_shows_its_progress(client, core_user, samples_dir):
    from conversion.models import Batch

    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    data = (samples_dir / "isoxml-js/data/2021-04-09T15_33_26_taskdata.zip").read_bytes()
    response = client.post(f"{url}/upload", {"file": _zip_file(data), "provider": "ProviderB"})
    assert response.status_code == 303, response.content[:500]
    batch = Batch.objects.get(core_user=core_user)
    assert (batch.provider, batch.size) == ("ProviderB", len(data))
    assert response["Location"] == f"{url}/batches/{batch.pk}"
    status = client.get(f"{url}/batches/{batch.pk}/status").json()
    assert status["id"] == str(batch.pk) and status["status"] == "PROCESSED", status
    assert [f["status"] for f in status["files"]] == ["processed"]
    page = client.get(response["Location"]).content.decode()
    assert "PROCESSED" in page and 'http-equiv="refresh"' not in page


@pytest.mark.django_db(transaction=True)
def test_batch_pages_show_only_batches_uploaded_through_the_link(client, core_user, samples_dir):
    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    _other, other_url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    data = (samples_dir / "isoxml-js/data/2021-04-09T15_33_26_taskdata.zip").read_bytes()
    location = client.post(f"{url}/upload", {"file": _zip_file(data)})["Location"]
    batch_id = location.rsplit("/", 1)[1]
    page = client.get(f"{other_url}/batches/{batch_id}")
    assert page.status_code == 404 and "Upload not found" in page.content.decode()
    # The link exists: what is not found is the upload (it said "Link not found"); compact JSON, as the API's
    response = client.get(f"{other_url}/batches/{batch_id}/status")
    problem = assert_problem(response, 404, "notFound")
    assert (
        problem["detail"] == "Upload not found. This link has no upload at this address. Open the link again to upload."
    )
    assert response.content.startswith(b'{"type":"')
    # A revoked link's status JSON is a problem document too (it was {"error": "revoked"}), with the spec's key
    services.magic_link_delete(link=link)
    problem = assert_problem(client.get(f"{url}/batches/{batch_id}/status"), 410, "magicLinkExpired")
    assert problem["detail"].startswith("This link is no longer valid.")


@pytest.mark.django_db(transaction=True)
def test_a_batch_uploaded_through_a_link_still_shows_its_progress_once_the_link_expired(client, core_user, samples_dir):
    """The user who uploaded waits on the progress page; the link expiring meanwhile must not hide it."""
    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    data = (samples_dir / "isoxml-js/data/2021-04-09T15_33_26_taskdata.zip").read_bytes()
    location = client.post(f"{url}/upload", {"file": _zip_file(data)})["Location"]
    assert f'<a id="batch-next" href="{url}">Upload another file</a>' in client.get(location).content.decode()
    MagicLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert client.get(url).status_code == 410  # the link itself is gone
    page = client.get(location)
    assert page.status_code == 200
    # It offers no other upload, which would lead to the 410 page; it says why
    assert "Upload another file" not in page.content.decode() and f'href="{url}"' not in page.content.decode()
    assert "This link has expired. To upload more files, ask the service that sent it to you for a new link." in (
        page.content.decode()
    )
    assert client.get(f"{location}/status").json()["status"] == "PROCESSED"


@pytest.mark.parametrize("widget", [MagicLink.Widget.PROVIDER, MagicLink.Widget.AUTHENTICATION])
def test_a_link_that_is_not_for_uploads_takes_none(client, core_user, oauth_app, widget):
    from conversion.models import Batch

    if widget == MagicLink.Widget.PROVIDER:
        _link, url = make_link(core_user, widget, allowed_providers=["ProviderA"])
    else:
        _link, url = make_link(core_user, widget, provider="ProviderA")
    response = client.post(f"{url}/upload", {"file": _zip_file(b"PK\x05\x06" + bytes(18))})
    assert response.status_code == 404 and not Batch.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_a_failed_upload_says_no_file_was_read_and_pages_answer_head(client, core_user):
    """HEAD (link checkers, chat previews) answers like GET without a body; a batch that failed without a file says
    so, where "No files yet." promised files to come."""
    import zipfile

    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("notes.txt", "no machine data here")
    location = client.post(f"{url}/upload", {"file": _zip_file(archive.getvalue())})["Location"]
    status = client.get(f"{location}/status").json()
    assert status["status"] == "FAILED" and status["files"] == [], status
    page = client.get(location).content.decode()
    assert "No file could be read from the upload." in page and "No files yet." not in page
    assert 'http-equiv="refresh"' not in page  # a failed batch is final: the page stops reloading
    assert "<title>Upload failed</title>" in page  # (it said "Upload status" whatever the end)
    for target in (url, location, f"{location}/status"):
        head = client.head(target)
        assert head.status_code == 200 and head.content == b"", target


@pytest.mark.parametrize("meanwhile", ["revoked", "user deleted", "owner deactivated"])
def test_a_link_revoked_or_its_user_deleted_while_the_upload_streamed_takes_nothing(
    client, owner, core_user, meanwhile
):
    """The link is checked before the body streams in, and again (locked) before the batch is made: a revocation
    or the user's deletion in between is the link's 410 page, no batch and no stored zip (was a batch for a
    revoked link, or a 500)."""
    from django.core.files.uploadedfile import SimpleUploadedFile

    from conversion.models import Batch
    from platform_site.accounts.models import CoreUser
    from platform_site.accounts.services import core_user_delete

    link, _url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    seen = MagicLink.objects.select_related("core_user").get(pk=link.pk)  # what the page resolved first
    if meanwhile == "revoked":
        services.magic_link_delete(link=link)  # DELETE .../magic-link/file-upload/{id}
    elif meanwhile == "owner deactivated":
        type(owner).objects.filter(pk=owner.pk).update(is_active=False)
    else:
        core_user_delete(core_user=CoreUser.objects.get(pk=core_user.pk))
    upload = SimpleUploadedFile("late.zip", b"PK\x05\x06" + bytes(18))
    with pytest.raises(services.LinkUnavailable) as refused:
        services.link_upload(link=seen, provider="Other", upload=upload)
    assert refused.value.status == {"revoked": 410, "user deleted": 410, "owner deactivated": 403}[meanwhile]
    assert not Batch.objects.exists()


def test_the_links_of_a_deleted_core_user_say_they_are_no_longer_valid_for_a_while(client, owner, core_user):
    """Supplement: "Expired or deleted links show a clear page with 410". A link deleted with its core user (its
    rows are gone) said 404 "This link does not exist. Check that you copied the whole address." """
    from magiclinks.models import LinkTombstone
    from magiclinks.services.links import TOMBSTONE_KEPT
    from platform_site.accounts.services import core_user_delete, owner_delete
    from tests.factories import CoreUserFactory

    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    _revoked, revoked_url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    services.magic_link_delete(link=_revoked)
    # (expired a year ago: its 410 is kept TOMBSTONE_KEPT past the user's deletion, the later of the two)
    expired, expired_url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    MagicLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(days=365))
    survivor = CoreUserFactory(owner=owner)
    _kept, kept_url = make_link(survivor, MagicLink.Widget.FILEUPLOAD)
    core_user_delete(core_user=core_user)
    for gone in (url, revoked_url):
        page = client.get(gone)
        assert page.status_code == 410, gone
        assert "This link is no longer valid" in page.content.decode()
    assert client.get(kept_url).status_code == 200
    # Past the link's expiry and TOMBSTONE_KEPT the sweep forgets it: then it is as unknown as a link never made
    for address in (url, expired_url):
        tombstone = LinkTombstone.objects.get(token_hash=token_hash(address.rsplit("/", 1)[1]))
        assert tombstone.kept_until > timezone.now() + TOMBSTONE_KEPT - timedelta(minutes=1), address
    assert client.get(expired_url).status_code == 410
    LinkTombstone.objects.update(kept_until=timezone.now())
    assert services.link_tombstones_sweep() == 3
    assert client.get(url).status_code == 404
    # An owner's deletion deletes its core users as one is: their links say so too
    owner_delete(owner=owner)
    assert client.get(kept_url).status_code == 410


def test_a_link_deleted_through_the_api_is_forgotten_as_a_tombstone_is(client, core_user):
    """A link deleted through the API was kept for ever (only marked deleted): past the later of its expiry and its
    deletion and TOMBSTONE_KEPT, the sweep forgets it; a recently deleted one still says 410."""
    from magiclinks.services.links import TOMBSTONE_KEPT

    old, old_url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    recent, recent_url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    # deleted long ago, but valid for another year had it not been: kept until TOMBSTONE_KEPT past that expiry
    unexpired, unexpired_url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    for link in (old, recent, unexpired):
        services.magic_link_delete(link=link)
    long_ago = timezone.now() - TOMBSTONE_KEPT - timedelta(days=1)
    MagicLink.objects.filter(pk=old.pk).update(expires_at=long_ago, deleted_at=long_ago)
    MagicLink.objects.filter(pk=unexpired.pk).update(
        expires_at=timezone.now() + timedelta(days=365), deleted_at=long_ago
    )
    assert services.link_tombstones_sweep() == 1
    assert not MagicLink.objects.filter(pk=old.pk).exists()
    answers = [client.get(url).status_code for url in (old_url, recent_url, unexpired_url)]
    assert answers == [404, 410, 410]


def test_upload_errors_show_the_form_again(client, core_user):
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    not_zip = client.post(f"{url}/upload", {"file": _zip_file(b"hello, not a zip", "notes.txt")})
    assert not_zip.status_code == 400 and "not a zip archive" in not_zip.content.decode()
    assert client.post(f"{url}/upload", {}).status_code == 400
    bad_provider = client.post(f"{url}/upload", {"file": _zip_file(b"PK\x05\x06" + bytes(18)), "provider": "Nope"})
    assert bad_provider.status_code == 400
    # The address of the refused upload, opened again (Enter in the address bar): back to the link's page
    for method in (client.get, client.head):
        again = method(f"{url}/upload")
        assert (again.status_code, again["Location"]) == (303, url)
    assert client.get(f"{url}/upload", follow=True).content.decode().count('id="file"') == 1


def test_an_upload_whose_file_name_is_not_utf8_says_so(client, core_user):
    """Django's parser drops the part whose headers are not UTF-8; the page asked only to choose a file."""
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    body = (
        b'--BB\r\nContent-Disposition: form-data; name="file"; filename="Ma\xefs.zip"\r\n\r\n'
        + b"PK\x05\x06"
        + bytes(18)
        + b"\r\n--BB--\r\n"
    )
    response = client.generic("POST", f"{url}/upload", body, content_type="multipart/form-data; boundary=BB")
    error = re.search(r'id="upload-error">([^<]*)<', response.content.decode()).group(1)
    assert (response.status_code, error) == (
        400,
        "Choose a .zip file to upload. If you chose one, it did not arrive whole, or its name is not UTF-8 text: "
        "rename it and try again.",
    )
    # A larger file: Django read the dropped part's bytes as headers, and the page was a bare JSON problem
    larger = body.replace(b"\r\n--BB--", bytes(200_000) + b"\r\n--BB--")
    response = client.generic("POST", f"{url}/upload", larger, content_type="multipart/form-data; boundary=BB")
    error = re.search(r'id="upload-error">([^<]*)<', response.content.decode()).group(1)
    assert response.status_code == 400 and "a file name in another encoding makes its part unreadable" in error


def test_too_large_uploads_are_413(client, core_user, settings):
    settings.CONVERSION_UPLOAD_MAX_BYTES = 10
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    response = client.post(f"{url}/upload", {"file": _zip_file(b"PK\x03\x04" + bytes(100))})
    assert response.status_code == 413 and "larger than the limit" in response.content.decode()


@pytest.mark.parametrize(
    "limit, shown", [(3 * 1024**3, "3 GiB"), (2_000_000, "1.9 MiB"), (1536, "1.5 KiB"), (10, "10 bytes")]
)
def test_the_upload_page_and_its_413_name_the_configured_limit(client, core_user, settings, limit, shown):
    """The help text said "Up to 3 GB." whatever the limit, and the 413 "the limit of 3221225472 bytes"."""
    settings.CONVERSION_UPLOAD_MAX_BYTES = limit
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    assert f'<p class="help" id="file-help">Up to {shown}.</p>' in client.get(url).content.decode()
    if limit > 10:
        return
    refused = client.post(f"{url}/upload", {"file": _zip_file(b"PK\x03\x04" + bytes(100))})
    error = re.search(r'id="upload-error">([^<]*)<', refused.content.decode()).group(1)
    assert (refused.status_code, error) == (
        413,
        "The file is larger than the limit of 10 bytes. Upload a smaller .zip file.",
    )
    assert f'<p class="help" id="file-help">Up to {shown}.</p>' in refused.content.decode()


def test_upload_needs_the_csrf_token(core_user):
    from django.test import Client

    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    response = Client(enforce_csrf_checks=True).post(f"{url}/upload", {"file": _zip_file(b"PK\x05\x06" + bytes(18))})
    assert response.status_code == 403 and "This form has expired" in response.content.decode()
    # The way back is to the upload page, named as such (it said "Back to your providers": the link has none)
    page = response.content.decode()
    assert f'<p><a href="{url}">Back to the upload page</a></p>' in page and "providers" not in page


@pytest.mark.django_db(transaction=True)
def test_a_new_connection_replaces_the_earlier_grants_refresh_token(
    connected_and_watched, client, core_user, oauth_server, webhook_receiver
):
    """The earlier grant's refresh token was kept when the new grant gave none: the next sweep refreshed with it,
    was refused, and made the fresh connection UNAUTHENTICATED."""
    from magiclinks.services import credentials_refresh_sweep

    url = connected_and_watched()
    old = ProviderCredential.objects.get(core_user=core_user).refresh_token
    # Given that grant revoked at the provider, and a new connection whose grant has no refresh token
    oauth_server.refresh_tokens.discard(old)
    oauth_server.answer_extra = {"refresh_token": None}
    connect(client, url)
    credential = ProviderCredential.objects.get(core_user=core_user)
    assert credential.refresh_token == "" and credential.status == "AUTHENTICATED"
    # Then it is never refreshed (no refresh token) and stays connected
    ProviderCredential.objects.filter(pk=credential.pk).update(expires_at=timezone.now() + timedelta(seconds=60))
    assert credentials_refresh_sweep() == 0
    assert ProviderCredential.objects.get(pk=credential.pk).status == "AUTHENTICATED"
    assert webhook_receiver.received == []


def _rotating(oauth_server) -> None:
    """The provider rotates refresh tokens: one used is refused afterwards."""
    answer = oauth_server.token_answer

    def token_answer(form, authorization):
        status, body = answer(form, authorization)
        if status == 200 and form.get("grant_type") == "refresh_token":
            oauth_server.refresh_tokens.discard(form["refresh_token"])
        return status, body

    oauth_server.token_answer = token_answer


@pytest.mark.django_db(transaction=True)
def test_a_refresh_outrun_by_another_leaves_the_credential_as_the_other_left_it(
    client, owner, core_user, oauth_server, oauth_app, settings, webhook_receiver, subscribe, monkeypatch
):
    """Two refreshes at once (two workers): the later one's refusal of the token the first had rotated made the
    freshly refreshed credential UNAUTHENTICATED, with a false credentialsUnauthenticated."""
    from magiclinks import tasks
    from platform_site.accounts import oauth

    settings.PUBLIC_BASE_URL = "http://testserver"
    subscribe(owner, webhook_receiver, ["credentialsUnauthenticated"])
    _rotating(oauth_server)
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    connect(client, url)
    credential = ProviderCredential.objects.get(core_user=core_user)
    real, calls = oauth.token_refresh, []

    def token_refresh(application, **kwargs):  # a second task runs while the first one's request is in flight
        calls.append(1)
        if len(calls) == 1:
            tasks.magiclinks_credential_refresh(str(credential.pk))
        return real(application, **kwargs)

    monkeypatch.setattr(oauth, "token_refresh", token_refresh)
    tasks.magiclinks_credential_refresh(str(credential.pk))
    after = ProviderCredential.objects.get(pk=credential.pk)
    assert after.status == "AUTHENTICATED" and after.refresh_token in oauth_server.refresh_tokens
    assert webhook_receiver.received == []
    # Only the first reached the provider (the second found the refresh under way); and its claim ended
    assert calls == [1] and _refresh_requests(oauth_server) == 1
    assert after.refresh_claimed_until is None


def _refresh_requests(oauth_server) -> int:
    return sum(form.get("grant_type") == "refresh_token" for form in oauth_server.token_requests)


@pytest.mark.django_db(transaction=True)
def test_a_refresh_claimed_by_a_task_that_died_is_taken_over_once_the_claim_expires(
    client, core_user, oauth_server, oauth_app, settings
):
    from magiclinks import tasks

    settings.PUBLIC_BASE_URL = "http://testserver"
    _rotating(oauth_server)
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    connect(client, url)
    credential = ProviderCredential.objects.get(core_user=core_user)
    # Claimed by a refresh under way: another leaves the provider alone
    ProviderCredential.objects.filter(pk=credential.pk).update(
        refresh_claimed_until=timezone.now() + timedelta(minutes=1)
    )
    tasks.magiclinks_credential_refresh(str(credential.pk))
    assert _refresh_requests(oauth_server) == 0
    assert ProviderCredential.objects.get(pk=credential.pk).access_token == credential.access_token
    # That refresh died: once its claim expired, the next one refreshes
    ProviderCredential.objects.filter(pk=credential.pk).update(
        refresh_claimed_until=timezone.now() - timedelta(seconds=1)
    )
    tasks.magiclinks_credential_refresh(str(credential.pk))
    after = ProviderCredential.objects.get(pk=credential.pk)
    assert _refresh_requests(oauth_server) == 1
    assert after.access_token != credential.access_token and after.status == "AUTHENTICATED"
    assert after.refresh_claimed_until is None
    # A refusal ends the claim too
    oauth_server.fail_token = True
    tasks.magiclinks_credential_refresh(str(credential.pk))
    after = ProviderCredential.objects.get(pk=credential.pk)
    assert (after.status, after.refresh_claimed_until, _refresh_requests(oauth_server)) == ("UNAUTHENTICATED", None, 2)


@pytest.mark.django_db(transaction=True)
def test_a_refresh_of_a_credential_connected_again_since_it_was_read_leaves_it_alone(
    client, core_user, oauth_server, oauth_app, settings
):
    """The task read the credential; the user connected again before it ran: the fresh tokens need no refresh, and
    the old refresh token (rotated away) must not be spent, nor the new credential claimed."""
    from magiclinks.services import credential_refresh

    settings.PUBLIC_BASE_URL = "http://testserver"
    _rotating(oauth_server)
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    connect(client, url)
    read = ProviderCredential.objects.get(core_user=core_user)
    connect(client, url)  # connected again
    fresh = ProviderCredential.objects.get(core_user=core_user)
    assert credential_refresh(credential=read) is None
    after = ProviderCredential.objects.get(pk=fresh.pk)
    assert _refresh_requests(oauth_server) == 0 and after.refresh_claimed_until is None
    assert (after.access_token, after.status) == (fresh.access_token, "AUTHENTICATED")


@pytest.mark.django_db(transaction=True)
def test_a_refresh_answer_without_a_refresh_token_keeps_the_one_there_was(
    client, core_user, oauth_server, oauth_app, settings
):
    """RFC 6749 section 6: the provider may leave the refresh token out of a refresh's answer; it stays valid."""
    from magiclinks.services import credential_refresh

    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    connect(client, url)
    credential = ProviderCredential.objects.get(core_user=core_user)
    real_answer = oauth_server.token_answer

    def without_refresh_token(form, authorization):
        status, body = real_answer(form, authorization)
        if form.get("grant_type") == "refresh_token":
            body.pop("refresh_token", None)
        return status, body

    oauth_server.token_answer = without_refresh_token
    refreshed = credential_refresh(credential=credential)
    assert refreshed is not None and refreshed.access_token != credential.access_token
    assert refreshed.refresh_token == credential.refresh_token
    assert credential_refresh(credential=refreshed) is not None  # and it still refreshes
    assert _refresh_requests(oauth_server) == 2


@pytest.mark.django_db(transaction=True)
def test_disconnecting_while_a_refresh_is_in_flight_stays_disconnected(
    client, core_user, oauth_server, oauth_app, settings, monkeypatch
):
    """The refresh stored its answer with update_or_create: the credential the user had just deleted came back."""
    from magiclinks import tasks
    from platform_site.accounts import oauth

    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(
        core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"], settings={"disconnectedEnabled": True}
    )
    connect(client, url)
    credential = ProviderCredential.objects.get(core_user=core_user)
    real = oauth.token_refresh

    def token_refresh(application, **kwargs):
        page = client.post(f"{url}/disconnect", {"provider": "ProviderA"}).content.decode()
        assert "You are disconnected" in page
        return real(application, **kwargs)

    monkeypatch.setattr(oauth, "token_refresh", token_refresh)
    tasks.magiclinks_credential_refresh(str(credential.pk))
    assert not ProviderCredential.objects.filter(core_user=core_user).exists()


@pytest.mark.django_db(transaction=True)
def test_a_core_user_deleted_while_at_the_provider_is_told_the_link_is_gone(
    client, owner, core_user, oauth_server, oauth_app, settings, monkeypatch
):
    """The code is exchanged outside any transaction: a core user deleted during the exchange had a credential stored
    for them anyway, and the foreign key failed it at commit (500)."""
    from platform_site.accounts import oauth
    from platform_site.accounts.services import core_user_delete

    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    real = oauth.authorization_code_exchange

    def exchange(application, **kwargs):
        tokens = real(application, **kwargs)
        core_user_delete(core_user=type(core_user).objects.get(pk=core_user.pk))
        return tokens

    monkeypatch.setattr(oauth, "authorization_code_exchange", exchange)
    response, _ = connect(client, url)
    assert response.status_code == 410
    page = response.content.decode()
    assert "This link is no longer available." in page and "Back to your providers" not in page
    assert len(oauth_server.token_requests) == 1
    assert not ProviderCredential.objects.exists() and not MagicLink.objects.exists()


def test_a_link_disconnects_only_its_own_providers(client, owner, core_user, oauth_server, oauth_app, settings):
    """A link that lets its user disconnect ProviderA leaves the user's connection to ProviderB alone."""
    settings.PUBLIC_BASE_URL = "http://testserver"
    ProviderCredential.objects.create(
        core_user=core_user, provider="ProviderB", access_token="b", status="AUTHENTICATED"
    )
    _link, url = make_link(
        core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"], settings={"disconnectedEnabled": True}
    )
    refused = client.post(f"{url}/disconnect", {"provider": "ProviderB"})
    assert refused.status_code == 400 and "This link does not offer that provider." in refused.content.decode()
    assert ProviderCredential.objects.get(core_user=core_user, provider="ProviderB").status == "AUTHENTICATED"


def test_a_links_page_shows_only_its_own_users_connections(client, owner, core_user, oauth_server, oauth_app, settings):
    from tests.factories import CoreUserFactory

    settings.PUBLIC_BASE_URL = "http://testserver"
    sibling = CoreUserFactory(owner=owner)
    ProviderCredential.objects.create(core_user=sibling, provider="ProviderA", access_token="s", status="AUTHENTICATED")
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    page = client.get(url).content.decode()
    assert 'data-state="authenticated"' not in page and "Connect ProviderA" in page


def test_a_callback_without_a_code_exchanges_nothing_and_keeps_the_connection(
    connected_and_watched, client, core_user, oauth_server, webhook_receiver
):
    url = connected_and_watched()
    (path, query), _ = provider_answer(client, url)
    del query["code"]
    response = client.get(path, query)
    assert response.status_code == 400 and "no authorization code" in response.content.decode()
    assert [r["grant_type"] for r in oauth_server.token_requests] == ["authorization_code"]
    assert ProviderCredential.objects.get(core_user=core_user).status == "AUTHENTICATED"
    assert webhook_receiver.wait_for(1, timeout=0.3) == []


def test_the_pkce_verifier_is_as_long_as_rfc_7636_asks(client, core_user, oauth_server, oauth_app, settings):
    settings.PUBLIC_BASE_URL = "http://testserver"
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    connect(client, url)
    [token_request] = oauth_server.token_requests
    assert 43 <= len(token_request["code_verifier"]) <= 128
    assert re.fullmatch(r"[A-Za-z0-9._~-]+", token_request["code_verifier"])


def test_the_browser_cookie_is_fresh_long_lax_and_http_only(client, owner, core_user):
    provider_app(owner, "ProviderA")
    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    client.cookies["magiclink_browser"] = "x"  # a short (or planted) value is not taken over
    response = client.get(f"{url}/connect/ProviderA")
    cookie = response.cookies["magiclink_browser"]
    assert cookie.value != "x" and len(cookie.value) >= 32
    assert cookie["samesite"] == "Lax" and cookie["httponly"]
    for name, morsel in response.cookies.items():
        assert morsel["samesite"] == "Lax", name


def test_link_pages_and_their_answers_are_kept_out_of_indexes_and_not_sniffed(client, core_user):
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    for target in (url, f"/links/{'x' * 43}"):
        response = client.get(target)
        assert response["X-Robots-Tag"] == "noindex, nofollow", target
        assert response["X-Content-Type-Options"] == "nosniff", target


@pytest.mark.django_db(transaction=True)
def test_a_credential_without_a_refresh_token_or_not_connected_is_not_refreshed(
    client, owner, core_user, oauth_server, oauth_app, settings, webhook_receiver, subscribe
):
    from magiclinks.tasks import magiclinks_credential_refresh

    subscribe(owner, webhook_receiver, ["credentialsUnauthenticated"])
    no_refresh = ProviderCredential.objects.create(
        core_user=core_user, provider="ProviderA", access_token="a", refresh_token="", status="AUTHENTICATED"
    )
    magiclinks_credential_refresh.delay(str(no_refresh.pk))
    no_refresh.refresh_from_db()
    assert no_refresh.status == "UNAUTHENTICATED" and "refresh token" in no_refresh.status_message
    assert oauth_server.token_requests == []
    assert len(webhook_receiver.wait_for(1)) == 1
    # already UNAUTHENTICATED: the provider is not asked again, nothing is announced again
    magiclinks_credential_refresh.delay(str(no_refresh.pk))
    assert oauth_server.token_requests == []
    assert len(webhook_receiver.wait_for(2, timeout=0.5)) == 1


@pytest.mark.django_db(transaction=True)
def test_a_refusal_of_tokens_the_user_replaced_since_marks_and_tells_nothing(
    connected_and_watched, client, core_user, webhook_receiver
):
    """The refused tokens were read before the user connected again: the new connection stays, and the API owner is
    not told of a lost connection that is not lost."""
    from magiclinks.services.connections import credentials_unauthenticated

    url = connected_and_watched()
    read = ProviderCredential.objects.get(core_user=core_user)
    connect(client, url)  # connected again: new tokens
    credentials_unauthenticated(core_user=core_user, provider="ProviderA", message="invalid_grant", read=read)
    assert ProviderCredential.objects.get(core_user=core_user).status == "AUTHENTICATED"
    assert webhook_receiver.wait_for(1, timeout=0.5) == []
    # the same refusal of the tokens as they are now is recorded and told
    current = ProviderCredential.objects.get(core_user=core_user)
    credentials_unauthenticated(core_user=core_user, provider="ProviderA", message="invalid_grant", read=current)
    assert ProviderCredential.objects.get(core_user=core_user).status == "UNAUTHENTICATED"
    assert len(webhook_receiver.wait_for(1)) == 1


def test_a_method_a_page_has_not_is_the_405_page_not_a_csrf_refusal(core_user):
    """The CSRF middleware answered Django's own 403 page to a DELETE or a PUT of a page that takes neither."""
    browser = Client(enforce_csrf_checks=True)
    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD, settings=SETTINGS)
    for method, path, allow in (
        ("delete", url, "GET, HEAD"),
        ("put", url, "GET, HEAD"),
        ("patch", f"{url}/upload", "GET, HEAD, POST"),
        ("post", f"{url}/disconnect", None),  # a method it has: CSRF is checked (no token: 403)
    ):
        response = getattr(browser, method)(path)
        if allow is None:
            assert response.status_code == 403
            continue
        page = response.content.decode()
        assert (response.status_code, response["Allow"]) == (405, allow), (method, path)
        listed = {"GET, HEAD": "GET and HEAD", "GET, HEAD, POST": "GET, HEAD and POST"}[allow]
        assert f"answers {listed} only" in page and "CSRF" not in page


def test_a_provider_whose_application_was_deleted_is_offered_no_connect_button(client, core_user, oauth_app):
    from platform_site.accounts.services import provider_application_delete

    _link, url = make_link(core_user, MagicLink.Widget.PROVIDER, allowed_providers=["ProviderA"])
    assert 'id="connect-ProviderA"' in client.get(url).content.decode()
    # When the API owner deletes its ProviderA application after making the link
    provider_application_delete(application=oauth_app)
    # Then the page names ProviderA without a button that could only fail
    page = client.get(url).content.decode()
    assert 'id="connect-ProviderA"' not in page and f"{url}/connect/ProviderA" not in page
    assert "Not available at the moment" in page
    # and the connect address itself still says why
    response = client.get(f"{url}/connect/ProviderA")
    assert response.status_code == 503 and "not set up for this service any more" in response.content.decode()


def test_the_text_colour_contrasts_at_least_4_5_to_1_with_any_background(client, core_user):
    """The choice compared the background with pure black, but the pages rendered #111111: on #767676 to #7B7B7B that
    text had less than 4.5:1. Then #111111 was compared, and on #777777 to #7B7B7B neither it nor white reached 4.5:1
    (#797979: 4.35:1, the company name's, found by axe-core)."""

    def text_colour(background: str) -> str:
        _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD, settings={"backgroundColor": background})
        return re.search(r"--page-bg: #\w+; --page-fg: (#[0-9A-F]{6})", client.get(url).content.decode()).group(1)

    for level in range(0, 256, 3):
        grey = "#" + f"{level:02X}" * 3
        chosen = text_colour(grey)
        other = "#000000" if chosen == "#FFFFFF" else "#FFFFFF"
        assert contrast_ratio(rgb(grey), rgb(chosen)) >= contrast_ratio(rgb(grey), rgb(other)), (grey, chosen)
        assert contrast_ratio(rgb(grey), rgb(chosen)) >= 4.5, (grey, chosen)
    for grey in ("#767676", "#777777", "#787878", "#797979", "#7A7A7A", "#7B7B7B"):  # (where the two choices cross)
        assert contrast_ratio(rgb(grey), rgb(text_colour(grey))) >= 4.5, grey


def test_an_upload_error_comes_first_names_its_field_and_the_title_says_error(client, core_user, settings, monkeypatch):
    """The error paragraph was tied to no field (the file input was described by its help text alone), nothing took
    focus, and the title stayed "Upload machine files" for every 400, 408 and 413."""
    from django.http import UnreadablePostError

    from conversion import uploads

    _link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    opened = client.get(url).content.decode()
    assert (
        "<title>Upload machine files</title>" in opened and "aria-invalid" not in opened and "autofocus" not in opened
    )
    answers = [(client.post(f"{url}/upload", {}), 400, "file")]
    bad_provider = {"file": _zip_file(b"PK\x05\x06" + bytes(18)), "provider": "Nope"}
    answers.append((client.post(f"{url}/upload", bad_provider), 400, "provider"))
    settings.CONVERSION_UPLOAD_MAX_BYTES = 10
    answers.append((client.post(f"{url}/upload", {"file": _zip_file(b"PK\x03\x04" + bytes(100))}), 413, "file"))

    def stalled(request):
        raise UnreadablePostError("nothing received")

    monkeypatch.setattr(uploads, "upload_parse", stalled)
    answers.append((client.post(f"{url}/upload", {}), 408, "file"))
    for response, status, field in answers:
        page = response.content.decode()
        assert response.status_code == status
        assert "<title>Error: Upload machine files</title>" in page, status
        # the alert is the first thing under the heading, before the form's introduction
        assert re.search(r'</h1>\s*<p role="alert" class="notice notice-error" id="upload-error">', page), status
        control = re.search(rf'<(?:input|select) [^>]*id="{field}"[^>]*>', page).group(0)
        assert 'aria-describedby="upload-error' in control and 'aria-invalid="true"' in control, (status, control)
        assert "autofocus" in control and page.count("autofocus") == 1 and page.count('aria-invalid="true"') == 1


def test_opening_the_upload_address_leads_to_the_links_page_as_the_link_stands(client, core_user):
    """A GET of `/links/<token>/upload` answered 405 "This address answers POST only." with no way back."""
    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    live = client.get(f"{url}/upload", follow=True)
    assert live.redirect_chain == [(url, 303)] and live.status_code == 200
    assert "<h1>Upload machine files</h1>" in live.content.decode()
    # A link that cannot be used answers its page's answer at once (no redirect to it: every route answers an
    # unknown id with a client error)
    MagicLink.objects.filter(pk=link.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    expired = client.get(f"{url}/upload")
    assert expired.status_code == 410 and "This link has expired" in expired.content.decode()
    unknown = client.get(f"/links/{'x' * 43}/upload")
    assert unknown.status_code == 404 and "Link not found" in unknown.content.decode()


def test_an_unfinished_batch_page_offers_a_refresh_link_and_never_reloads_itself(client, core_user):
    """Without JavaScript the page reloaded itself every 3 s (`<noscript><meta http-equiv="refresh">`, WCAG F41):
    the user now chooses when to look again."""
    from conversion.models import Batch
    from magiclinks.models import LinkUpload

    link, url = make_link(core_user, MagicLink.Widget.FILEUPLOAD)
    batch = Batch.objects.create(core_user=core_user, provider="Other", file_name="slow.zip", size=22)
    LinkUpload.objects.create(link=link, batch_id=batch.pk)
    page_url = f"{url}/batches/{batch.pk}"
    page = client.get(page_url).content.decode()
    assert "RECEIVED" in page and "http-equiv" not in page.lower()
    assert f'<a class="button" href="{page_url}">Refresh status</a>' in page
    Batch.objects.filter(pk=batch.pk).update(status="PROCESSED")
    finished = client.get(page_url).content.decode()
    assert "Your files have been processed." in finished and "Refresh status" not in finished
    assert "http-equiv" not in finished.lower()
