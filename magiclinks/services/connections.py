"""Provider connections made through a link's page: the OAuth 2.0 authorization-code flow (PKCE, a single-use
`state` bound to the link, the provider and the browser), the credentials it stores, their refresh, and disconnecting.
"""

import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from platform_site.accounts import oauth
from platform_site.accounts.crypto import secret_unreadable
from platform_site.accounts.models import CoreUser, ProviderApplication, ProviderCredential
from platform_site.accounts.services import (
    provider_application_find,
    provider_credential_delete,
    provider_credential_mark_unauthenticated,
    provider_credential_refresh_claim,
    provider_credential_store,
    providers_set_up,
)
from platform_site.api.errors import NotFoundError
from platform_site.api.urlsafety import UnsafeUrl, resolve_public, safe_session
from webhooks.models import EventType
from webhooks.services import event_emit

from ..models import LinkAuthorization, MagicLink
from .links import UNAVAILABLE_MESSAGE, LinkUnavailable, token_hash

AUTHORIZATION_LIFETIME = timedelta(minutes=10)
# Sign-ins under way from one link: each "Connect" click starts one; older ones are forgotten past this many.
AUTHORIZATIONS_PER_LINK = 10
CALLBACK_PATH = "/links/oauth/callback"


class AuthorizationRefused(Exception):
    """A step of connecting or disconnecting a provider cannot be honoured; `status` and a message for the end
    user."""

    def __init__(self, status: int, message: str, link: MagicLink | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.link = link


def oauth_redirect_uri() -> str:
    """The one redirect URI to register at every provider."""
    return settings.PUBLIC_BASE_URL.rstrip("/") + CALLBACK_PATH


def link_connections(link: MagicLink) -> dict[str, ProviderCredential]:
    """The core user's credentials at the link's providers, by provider."""
    return {
        c.provider: c
        for c in ProviderCredential.objects.filter(core_user_id=link.core_user_id, provider__in=link.providers)
    }


def link_providers_set_up(link: MagicLink) -> set[str]:
    """The link's providers its API owner still has an application for (one deleted since the link was made
    cannot be connected: the page offers no button for it)."""
    return providers_set_up(owner_id=link.core_user.owner_id, providers=link.providers)


def link_disconnect(*, link: MagicLink, provider: str) -> bool:
    """The end user chose to disconnect `provider` (only when the link allows it: otherwise a 400 saying so, the
    link itself being fine)."""
    if provider not in link.providers:
        raise AuthorizationRefused(400, "This link does not offer that provider.", link)
    if not link.settings.get("disconnectedEnabled"):
        raise AuthorizationRefused(400, f"This link does not offer to disconnect from {provider}.", link)
    return provider_credential_delete(core_user=link.core_user, provider=provider)


def browser_hash(nonce: str) -> str:
    return hashlib.sha256(b"browser:" + nonce.encode()).hexdigest()


def oauth_authorization_start(*, link: MagicLink, provider: str, browser_nonce: str) -> str:
    """Start the authorization-code flow for `provider` from `link`: record a single-use `state` bound to
    the link, the provider and this browser, with a PKCE verifier; returns the provider's authorize URL."""
    if provider not in link.providers:
        raise LinkUnavailable(404, "unknown provider")
    application = provider_application_find(owner_id=link.core_user.owner_id, provider=provider)
    if application is None:
        raise AuthorizationRefused(503, f"{provider} is not set up for this service any more.", link)
    state = secrets.token_urlsafe(32)
    verifier = secrets.token_urlsafe(48)
    with transaction.atomic():
        LinkAuthorization.objects.create(
            link=link,
            provider=provider,
            state_hash=token_hash(state),
            browser_hash=browser_hash(browser_nonce),
            code_verifier=verifier,
            expires_at=timezone.now() + AUTHORIZATION_LIFETIME,
        )
        _link_authorizations_trim(link)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    params = {
        "response_type": "code",
        "client_id": application.client_id,
        "redirect_uri": oauth_redirect_uri(),
        "state": state,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
    }
    if application.scopes:
        params["scope"] = " ".join(application.scopes)
    parts = urlsplit(application.authorize_url)
    query = f"{parts.query}&{urlencode(params)}" if parts.query else urlencode(params)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def _link_authorizations_trim(link: MagicLink) -> None:
    """Forget the link's sign-ins past their lifetime, and all but its latest AUTHORIZATIONS_PER_LINK: anyone with
    the link could store a row (and a PKCE verifier) a click, for as long as the link lives."""
    LinkAuthorization.objects.filter(link=link, expires_at__lte=timezone.now()).delete()
    older = LinkAuthorization.objects.filter(link=link).order_by("-created_at", "-pk")[AUTHORIZATIONS_PER_LINK:]
    LinkAuthorization.objects.filter(pk__in=list(older.values_list("pk", flat=True))).delete()


def link_authorizations_sweep() -> int:
    """Periodic: forget every sign-in past its lifetime (used or not); returns how many. A link nobody opens again
    keeps none."""
    deleted, _ = LinkAuthorization.objects.filter(expires_at__lte=timezone.now()).delete()
    return deleted


def _authorization_claim(state: str, browser_nonce: str) -> LinkAuthorization:
    """Take the authorization of `state` once; unknown, used, expired, or from another browser: refused."""
    with transaction.atomic():
        authorization = (
            LinkAuthorization.objects.select_for_update(of=("self",))
            .select_related("link__core_user__owner")
            .filter(state_hash=token_hash(state or ""))
            .first()
        )
        if authorization is None:
            raise AuthorizationRefused(400, "This sign-in attempt is not known. Start again from your link.")
        link = authorization.link
        if authorization.used_at is not None:
            raise AuthorizationRefused(400, "This sign-in attempt was already used. Start again.", link)
        if not browser_nonce or browser_hash(browser_nonce) != authorization.browser_hash:
            raise AuthorizationRefused(400, "This sign-in was started in another browser. Start again.", link)
        authorization.used_at = timezone.now()
        authorization.save(update_fields=["used_at"])
    if authorization.expires_at <= timezone.now():
        raise AuthorizationRefused(400, "This sign-in attempt took too long. Start again.", link)
    if link.deleted_at is not None:
        raise AuthorizationRefused(410, "This link has been revoked.", link)
    if link.expired:  # it expired while the user was at the provider
        raise AuthorizationRefused(410, "This link has expired. Ask for a new link.", link)
    if not link.core_user.owner.is_active:
        raise AuthorizationRefused(403, UNAVAILABLE_MESSAGE, link)
    return authorization


@dataclass
class ConnectionResult:
    link: MagicLink
    provider: str
    credential: ProviderCredential
    scopes_missing: list[str]


def oauth_authorization_complete(
    *, state: str, code: str | None, error: str | None, browser_nonce: str
) -> ConnectionResult:
    """The provider sent the user back: check `state`, exchange the code at the token URL (outside any
    transaction) and store the credentials. A failed exchange marks existing credentials
    UNAUTHENTICATED and emits `credentialsUnauthenticated`; every failure is `AuthorizationRefused`."""
    authorization = _authorization_claim(state, browser_nonce)
    link, provider = authorization.link, authorization.provider
    if error:
        raise AuthorizationRefused(400, f"{provider} did not grant access ({error[:100]}).", link)
    if not code:
        raise AuthorizationRefused(400, f"{provider} sent no authorization code.", link)
    application = provider_application_find(owner_id=link.core_user.owner_id, provider=provider)
    if application is None:
        raise AuthorizationRefused(503, f"{provider} is not set up for this service any more.", link)
    try:
        # Checked again now, used as checked.
        with safe_session(application.token_url, deadline=oauth.call_deadline()) as session:
            tokens = oauth.authorization_code_exchange(
                application,
                code=code,
                redirect_uri=oauth_redirect_uri(),
                code_verifier=authorization.code_verifier,
                session=session,
            )
    except (oauth.TokenRequestFailed, UnsafeUrl) as exc:
        credentials_unauthenticated(core_user=link.core_user, provider=provider, message=str(exc))
        raise AuthorizationRefused(502, f"The connection to {provider} failed: {exc}", link) from None
    try:
        credential = _credential_store(core_user=link.core_user, application=application, tokens=tokens)
    except NotFoundError:  # the core user (and so the link) was deleted while the user was at the provider
        raise AuthorizationRefused(410, "This link is no longer available.", link) from None
    return ConnectionResult(
        link=link, provider=provider, credential=credential, scopes_missing=scopes_missing(application, tokens.scope)
    )


def scopes_missing(application: ProviderApplication, granted: str) -> list[str]:
    """The scopes the application asks for that a token answer's `scope` leaves out. An answer without `scope`
    granted what was asked (RFC 6749 section 5.1)."""
    if not granted.strip():
        return []
    granted_scopes = set(granted.split())
    return [scope for scope in application.scopes if scope not in granted_scopes]


@transaction.atomic
def _credential_store(
    *,
    core_user: CoreUser,
    application: ProviderApplication,
    tokens: oauth.TokenSet,
    refreshed: ProviderCredential | None = None,
) -> ProviderCredential | None:
    """Keep what a provider's token endpoint answered as the core user's (AUTHENTICATED) credential: a connection's
    answer, or a refresh's of `refreshed` (kept only while it is as read; None when outdated). When it granted
    less than the application asks for, `credentialsLimitedPermission` tells the API owner: at each connection,
    and at a refresh only when what is missing changed."""
    credential = provider_credential_store(
        core_user=core_user,
        provider=application.provider,
        access_token=tokens.access_token,
        refresh_token=tokens.refresh_token,
        token_type=tokens.token_type,
        scope=tokens.scope,
        expires_at=tokens.expires_at,
        token_server=oauth.token_server(application.token_url),
        refreshed=refreshed,
    )
    if credential is None:
        return None
    missing = scopes_missing(application, tokens.scope)
    if missing and (refreshed is None or scopes_missing(application, refreshed.scope) != missing):
        event_emit(
            type=EventType.CREDENTIALS_LIMITED_PERMISSION,
            core_user=core_user,
            payload={
                "provider": application.provider,
                "message": f"{application.provider} did not grant: {' '.join(missing)}.",
            },
        )
    return credential


def provider_url_check(url: str) -> None:
    """Token URLs are fetched by us: the same private-address rule as webhook URLs applies."""
    resolve_public(url)


@transaction.atomic
def credentials_unauthenticated(
    *, core_user: CoreUser, provider: str, message: str, read: ProviderCredential | None = None
) -> None:
    """Record that `provider` refused tokens for `core_user` and tell the API owner (webhook event). With `read`
    (the credential whose tokens were refused), nothing is recorded or told when it changed meanwhile (another
    task refreshed it, the user connected again or disconnected)."""
    marked = provider_credential_mark_unauthenticated(
        core_user=core_user, provider=provider, message=message, read=read
    )
    if read is not None and marked is None:
        return
    event_emit(
        type=EventType.CREDENTIALS_UNAUTHENTICATED,
        core_user=core_user,
        payload={"provider": provider, "message": message},
    )


TOKEN_SERVER_MOVED = (
    "The {provider} application's token URL now names another server than the one this user connected at: "
    "connect again."
)


def credential_refresh(*, credential: ProviderCredential) -> ProviderCredential | None:
    """Refresh the tokens of `credential` at its provider. On refusal the credential becomes
    UNAUTHENTICATED and `credentialsUnauthenticated` is emitted; returns None then, and when the credential changed
    while its provider answered (disconnected, connected again, refreshed by a concurrent task: the answer is
    outdated and dropped), and when another refresh of it is under way (only one reaches the provider). A credential
    connected at another token server than the application's token URL names now is refused without a call: its
    refresh token (and the client secret) would go to a server that did not issue it."""
    core_user = credential.core_user
    application: ProviderApplication | None = provider_application_find(
        owner_id=core_user.owner_id, provider=credential.provider
    )
    try:
        if application is None:
            raise oauth.TokenRequestFailed(f"No application is set up for {credential.provider}.")
        if secret_unreadable(credential.refresh_token):
            raise oauth.TokenRequestFailed(
                f"The {credential.provider} tokens stored here cannot be read (they were encrypted with a key this"
                " server no longer has): connect again."
            )
        if not credential.refresh_token:
            raise oauth.TokenRequestFailed(f"{credential.provider} gave no refresh token.")
        if credential.token_server and credential.token_server != oauth.token_server(application.token_url):
            # Its refresh token is the issuing server's, and is not sent to another one.
            raise oauth.TokenRequestFailed(TOKEN_SERVER_MOVED.format(provider=credential.provider))
        # The claim outlasts the call: it ends when the answer (or the refusal) is stored.
        if not provider_credential_refresh_claim(credential, seconds=oauth.call_deadline() + 60):
            return None
        # Checked again now, used as checked.
        with safe_session(application.token_url, deadline=oauth.call_deadline()) as session:
            tokens = oauth.token_refresh(application, refresh_token=credential.refresh_token, session=session)
    except (oauth.TokenRequestFailed, UnsafeUrl) as exc:
        credentials_unauthenticated(
            core_user=core_user, provider=credential.provider, message=str(exc), read=credential
        )
        return None
    return _credential_store(core_user=core_user, application=application, tokens=tokens, refreshed=credential)


def credential_refresh_due(credential: ProviderCredential, now=None) -> bool:
    """Whether the tokens expire within CREDENTIAL_REFRESH_AHEAD_SECONDS and can be refreshed (no known expiry or
    no refresh token: never due). One whose refresh token cannot be read is due then too: its refresh tells the API
    owner to have the user connect again."""
    ahead = timedelta(seconds=settings.CREDENTIAL_REFRESH_AHEAD_SECONDS)
    return (
        credential.status == ProviderCredential.Status.AUTHENTICATED
        and credential.expires_at is not None
        and credential.expires_at <= (now or timezone.now()) + ahead
        and (bool(credential.refresh_token) or secret_unreadable(credential.refresh_token))
    )


def credentials_refresh_sweep() -> int:
    """Periodic: enqueue a refresh of every credential about to expire; returns how many. The task checks again
    that the credential is still due, so a refresh already done by an earlier run is not repeated (a provider
    that rotates refresh tokens would refuse the old one)."""
    from .. import tasks  # tasks import this module

    horizon = timezone.now() + timedelta(seconds=settings.CREDENTIAL_REFRESH_AHEAD_SECONDS)
    due = ProviderCredential.objects.filter(status=ProviderCredential.Status.AUTHENTICATED, expires_at__lte=horizon)
    sent = 0
    for credential in due:
        if credential_refresh_due(credential):
            tasks.magiclinks_credential_refresh.delay(str(credential.pk), only_if_due=True)
            sent += 1
    return sent
