"""Magic links: creation (optionally with the core user), revocation, opening a link's page, the OAuth 2.0
authorization-code flow a provider link starts, and uploads through a file-upload link."""

import base64
import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from urllib.parse import urlencode, urlsplit, urlunsplit

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from platform_site.accounts import oauth
from platform_site.accounts.models import CoreUser, ProviderApplication, ProviderCredential
from platform_site.accounts.services import (
    core_user_find_or_create,
    core_user_keep,
    provider_application_find,
    provider_credential_delete,
    provider_credential_mark_unauthenticated,
    provider_credential_refresh_claim,
    provider_credential_store,
)
from platform_site.api.errors import NOT_FOUND, DomainError, NotFoundError
from platform_site.api.urlsafety import UnsafeUrl, resolve_public, safe_session
from webhooks.models import EventType
from webhooks.services import event_emit

from .models import LinkAuthorization, LinkUpload, MagicLink

EXPIRES_IN_DEFAULT = 900
EXPIRES_IN_MIN = 900
EXPIRES_IN_MAX = 31_536_000
DEFAULT_SETTINGS = {"backgroundColor": "#F5F5F5", "showLeafUserName": False}
AUTHORIZATION_LIFETIME = timedelta(minutes=10)
CALLBACK_PATH = "/links/oauth/callback"
UNAVAILABLE_MESSAGE = "The service that sent this link is not available at the moment. Ask it for help."


class ProviderAppNotConfigured(DomainError):
    error_key = "providerAppNotConfigured"


class LinkUnavailable(Exception):
    """The page of a link cannot be shown: `status` 404 (unknown), 410 (expired or revoked) or 403 (its API owner
    is deactivated: the owner's API tokens are refused too, and the link works again if the owner is reactivated)."""

    def __init__(self, status: int, reason: str):
        super().__init__(reason)
        self.status = status
        self.reason = reason


class AuthorizationRefused(Exception):
    """The OAuth callback cannot be honoured; `status` and a message for the end user."""

    def __init__(self, status: int, message: str, link: MagicLink | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.link = link


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link_url(token: str) -> str:
    return f"{settings.PUBLIC_BASE_URL.rstrip('/')}/links/{token}"


def oauth_redirect_uri() -> str:
    """The one redirect URI to register at every provider."""
    return settings.PUBLIC_BASE_URL.rstrip("/") + CALLBACK_PATH


# --- API ---------------------------------------------------------------------------------------------


def _require_provider_apps(owner_id, providers: list[str]) -> None:
    missing = [p for p in providers if provider_application_find(owner_id=owner_id, provider=p) is None]
    if missing:
        raise ProviderAppNotConfigured(
            f"Set up the provider application first for: {', '.join(missing)}.",
            field_errors=[{"field": "provider", "message": f"No application set up for {p}."} for p in missing],
        )


def _normalised_settings(widget: str, values: dict | None) -> dict:
    result = dict(DEFAULT_SETTINGS)
    if widget != MagicLink.Widget.FILEUPLOAD:
        result["disconnectedEnabled"] = False
    result.update(values or {})
    return result


@transaction.atomic
def magic_link_create(
    *,
    core_user: CoreUser,
    widget: str,
    expires_in: int = EXPIRES_IN_DEFAULT,
    settings: dict | None = None,
    allowed_providers: list[str] | None = None,
    provider: str | None = None,
) -> tuple[MagicLink, str]:
    """A new link of `core_user`; returns it with its token (shown once: only the hash is kept).
    Provider and authentication links need the owner's application at each provider (400 otherwise)."""
    providers = [provider] if widget == MagicLink.Widget.AUTHENTICATION else list(allowed_providers or [])
    if widget != MagicLink.Widget.FILEUPLOAD:
        _require_provider_apps(core_user.owner_id, providers)
    core_user_keep(core_user.pk)
    token = secrets.token_urlsafe(32)  # 256 bits
    link = MagicLink.objects.create(
        core_user=core_user,
        widget=widget,
        token_hash=token_hash(token),
        allowed_providers=providers if widget == MagicLink.Widget.PROVIDER else [],
        provider=provider if widget == MagicLink.Widget.AUTHENTICATION else None,
        settings=_normalised_settings(widget, settings),
        expires_at=timezone.now() + timedelta(seconds=expires_in),
    )
    return link, token


@transaction.atomic
def magic_link_create_with_user(
    *, owner, external_id: str, name: str | None = None, email: str | None = None, **link_values
) -> tuple[MagicLink, str]:
    """A new link for the core user with `external_id`, who is created (name and e-mail defaulting to
    the externalId) unless they exist. Nothing is created when the link is refused."""
    widget = link_values["widget"]
    if widget == MagicLink.Widget.AUTHENTICATION:
        _require_provider_apps(owner.pk, [link_values["provider"]])
    elif widget == MagicLink.Widget.PROVIDER:
        _require_provider_apps(owner.pk, link_values["allowed_providers"])
    for _attempt in range(3):
        core_user, _created = core_user_find_or_create(
            owner=owner, external_id=external_id, name=name or external_id, email=email or external_id
        )
        # The user found may be being deleted: then, once it is gone, the externalId makes a new one.
        if core_user_keep(core_user.pk, missing_ok=True):
            return magic_link_create(core_user=core_user, **link_values)
    raise NotFoundError(NOT_FOUND)  # (deleted each time it was made: someone is deleting it on purpose)


@transaction.atomic
def magic_link_delete(*, link: MagicLink) -> None:
    """Revoke the link at once; its page answers 410 from now on."""
    MagicLink.objects.filter(pk=link.pk, deleted_at__isnull=True).update(deleted_at=timezone.now())


# --- Pages -------------------------------------------------------------------------------------------


def magic_link_resolve(token: str, *, allow_expired: bool = False) -> MagicLink:
    """The live link with this token, or `LinkUnavailable` (404 unknown, 410 revoked or expired, 403 its API owner
    deactivated)."""
    if not token or len(token) > 200:
        raise LinkUnavailable(404, "unknown")
    link = MagicLink.objects.select_related("core_user__owner").filter(token_hash=token_hash(token)).first()
    _link_check(link, allow_expired=allow_expired)
    return link


def _link_check(link: MagicLink | None, *, allow_expired: bool = False) -> None:
    """`LinkUnavailable` unless `link` (read with its core user and owner) may be used now."""
    if link is None:
        raise LinkUnavailable(404, "unknown")
    if link.deleted_at is not None:
        raise LinkUnavailable(410, "revoked")
    if link.expires_at <= timezone.now() and not allow_expired:
        raise LinkUnavailable(410, "expired")
    if not link.core_user.owner.is_active:
        raise LinkUnavailable(403, "unavailable")


def magic_link_open(token: str, *, count: bool = True) -> MagicLink:
    """Resolve the link for its page and count the visit (`usageCount`, `lastAccessedAt`) unless `count` is
    false (a HEAD from a link checker or a chat preview is no visit)."""
    link = magic_link_resolve(token)
    if not count:
        return link
    now = timezone.now()
    MagicLink.objects.filter(pk=link.pk).update(usage_count=F("usage_count") + 1, last_accessed_at=now)
    link.usage_count += 1
    link.last_accessed_at = now
    return link


def link_connections(link: MagicLink) -> dict[str, ProviderCredential]:
    """The core user's credentials at the link's providers, by provider."""
    return {
        c.provider: c
        for c in ProviderCredential.objects.filter(core_user_id=link.core_user_id, provider__in=link.providers)
    }


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
    LinkAuthorization.objects.create(
        link=link,
        provider=provider,
        state_hash=token_hash(state),
        browser_hash=browser_hash(browser_nonce),
        code_verifier=verifier,
        expires_at=timezone.now() + AUTHORIZATION_LIFETIME,
    )
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
    if link.expires_at <= timezone.now():  # it expired while the user was at the provider
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


def credential_refresh(*, credential: ProviderCredential) -> ProviderCredential | None:
    """Refresh the tokens of `credential` at its provider. On refusal the credential becomes
    UNAUTHENTICATED and `credentialsUnauthenticated` is emitted; returns None then, and when the credential changed
    while its provider answered (disconnected, connected again, refreshed by a concurrent task: the answer is
    outdated and dropped), and when another refresh of it is under way (only one reaches the provider)."""
    core_user = credential.core_user
    application: ProviderApplication | None = provider_application_find(
        owner_id=core_user.owner_id, provider=credential.provider
    )
    try:
        if application is None:
            raise oauth.TokenRequestFailed(f"No application is set up for {credential.provider}.")
        if not credential.refresh_token:
            raise oauth.TokenRequestFailed(f"{credential.provider} gave no refresh token.")
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
    no refresh token: never due)."""
    ahead = timedelta(seconds=settings.CREDENTIAL_REFRESH_AHEAD_SECONDS)
    return (
        credential.status == ProviderCredential.Status.AUTHENTICATED
        and credential.expires_at is not None
        and credential.expires_at <= (now or timezone.now()) + ahead
        and bool(credential.refresh_token)
    )


def credentials_refresh_sweep() -> int:
    """Periodic: enqueue a refresh of every credential about to expire; returns how many. The task checks again
    that the credential is still due, so a refresh already done by an earlier run is not repeated (a provider
    that rotates refresh tokens would refuse the old one)."""
    from . import tasks  # tasks import this module

    horizon = timezone.now() + timedelta(seconds=settings.CREDENTIAL_REFRESH_AHEAD_SECONDS)
    due = ProviderCredential.objects.filter(status=ProviderCredential.Status.AUTHENTICATED, expires_at__lte=horizon)
    sent = 0
    for credential in due:
        if credential_refresh_due(credential):
            tasks.magiclinks_credential_refresh.delay(str(credential.pk), only_if_due=True)
            sent += 1
    return sent


def link_disconnect(*, link: MagicLink, provider: str) -> bool:
    """The end user chose to disconnect `provider` (only when the link allows it)."""
    if not link.settings.get("disconnectedEnabled") or provider not in link.providers:
        raise LinkUnavailable(404, "disconnect not offered")
    return provider_credential_delete(core_user=link.core_user, provider=provider)


# --- Uploads -----------------------------------------------------------------------------------------


@transaction.atomic
def link_upload(*, link: MagicLink, provider: str, upload):
    """Receive a zip through a file-upload link into the same batch pipeline as `POST /batch`. The link was
    checked before the body streamed in; revoked or expired meanwhile, it is `LinkUnavailable` (410) now, and
    its user deleted meanwhile, 404. The link is locked until commit, so a revocation waits for the upload."""
    from conversion.services import batch_receive

    live = MagicLink.objects.select_for_update(of=("self",)).select_related("core_user__owner").filter(pk=link.pk)
    _link_check(live.first())
    try:
        batch = batch_receive(core_user=link.core_user, provider=provider, upload=upload)
    except NotFoundError:
        raise LinkUnavailable(404, "unknown") from None
    LinkUpload.objects.create(link=link, batch_id=batch.pk)
    return batch


def link_batch_progress(*, link: MagicLink, batch_id) -> dict:
    """Progress of a batch uploaded through `link` (404 for any other batch)."""
    from conversion.models import Batch
    from conversion.services import batch_progress

    if not LinkUpload.objects.filter(link=link, batch_id=batch_id).exists():
        raise LinkUnavailable(404, "unknown batch")
    batch = Batch.objects.filter(pk=batch_id, core_user_id=link.core_user_id).first()
    if batch is None:
        raise LinkUnavailable(404, "unknown batch")
    return batch_progress(batch)
