"""OAuth 2.0 token requests (RFC 6749) at a provider's token URL: the authorization-code exchange and
the refresh. Plain HTTP, no state: callers store the result (`provider_credential_store`) and announce
failures (`credentialsUnauthenticated`) themselves, from a layer that may emit events. Network I/O
only: call it outside transactions."""

from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import quote_plus, urlsplit

import requests
from django.conf import settings
from django.utils import timezone

from platform_site import outbound
from platform_site.text import storable

from .crypto import secret_unreadable
from .models import ProviderApplication

EXPIRES_IN_MAX = timedelta(days=3650)
ANSWER_MAX_BYTES = 256 * 1024  # a token answer is a few kilobytes; more is refused unread


class TokenRequestFailed(Exception):
    """The provider did not hand out tokens; the message says why, in words an end user may read."""


@dataclass
class TokenSet:
    access_token: str
    refresh_token: str
    token_type: str
    scope: str
    expires_at: datetime | None


DEFAULT_PORTS = {"http": 80, "https": 443}


def token_server(url: str) -> str:
    """The server a token URL names, `scheme://host:port` (lower case, the default port spelt out): the one that
    issued a credential's tokens, and the one its client secret was given for. A refresh token is only good at the
    server that issued it, and goes nowhere else."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:  # a port out of range: a stored URL was checked, so only ever an old row
        port = None
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def _timeout() -> float:
    return float(getattr(settings, "PROVIDER_TOKEN_TIMEOUT_SECONDS", 10.0))


def call_deadline() -> float:
    """The longest a token request may take in all (connecting, then the answer): each timeout bounds one read."""
    return outbound.call_deadline(_timeout())


def basic_credentials(client_id: str, client_secret: str) -> tuple[str, str]:
    """The user name and password of the client's HTTP Basic authentication: its id and secret each encoded as a
    form value first (RFC 6749 section 2.3.1, Appendix B: UTF-8, percent-encoded, a space as '+'), as the
    authorization server decodes them. Sent as they were, an id holding ':' could not be told from its secret, a
    '+' or '%' of a secret was read otherwise, and a character beyond Latin-1 failed the request (a 500 at the
    OAuth callback)."""
    return quote_plus(client_id), quote_plus(client_secret)


def token_request(
    application: ProviderApplication, form: dict[str, str], *, session: requests.Session | None = None
) -> TokenSet:
    """POST `form` to the token URL with the client authenticated by HTTP Basic (RFC 6749 section 2.3.1)
    and read the token answer; anything but a 2xx JSON with an access_token is `TokenRequestFailed`.
    `session`: the requests session to post with (callers pass one that connects only to checked addresses)."""
    if secret_unreadable(application.client_secret):
        raise TokenRequestFailed(
            f"The client secret of the {application.provider} application cannot be read here (it was encrypted with a"
            " key this server no longer has): the API owner must send it again."
        )
    try:
        response = (session or requests).post(
            application.token_url,
            data=form,
            auth=basic_credentials(application.client_id, application.client_secret),
            headers={"Accept": "application/json", "User-Agent": "agdata-platform-oauth/1"},
            timeout=(_timeout(), _timeout()),
            allow_redirects=False,
            stream=True,
        )
        raw = outbound.read_at_most(response, ANSWER_MAX_BYTES)
    except requests.RequestException as exc:
        if isinstance(exc, requests.Timeout):
            reason = "no answer in time" + outbound.connected_to(exc)
        else:
            reason = outbound.connection_failure(exc)
        raise TokenRequestFailed(f"{application.provider} could not be reached: {reason}.") from exc
    if raw is None:
        raise TokenRequestFailed(f"{application.provider} answered more than {ANSWER_MAX_BYTES // 1024} KiB.")
    body = outbound.json_object(raw)
    if response.status_code >= 300 or "error" in body:
        reason = body.get("error_description") or body.get("error") or f"HTTP {response.status_code}"
        raise TokenRequestFailed(f"{application.provider} refused the token request: {storable(str(reason))[:300]}")
    access_token = body.get("access_token")
    if not isinstance(access_token, str) or not access_token:
        raise TokenRequestFailed(f"{application.provider} answered without an access token.")
    refresh_token = str(body.get("refresh_token") or "")
    try:
        (access_token + refresh_token).encode()
    except UnicodeEncodeError:
        # A token is used as sent, never changed: one holding a lone surrogate (no UTF-8 for it) cannot be kept.
        raise TokenRequestFailed(f"{application.provider} answered a token that is not text.") from None
    return TokenSet(
        access_token=access_token,
        refresh_token=refresh_token,
        token_type=storable(str(body.get("token_type") or ""))[:64],
        scope=storable(str(body.get("scope") or ""))[:2000],
        expires_at=_expires_at(body.get("expires_in")),
    )


def _expires_at(expires_in) -> datetime | None:
    """When the access token expires: `expires_in` seconds from now, clamped to `EXPIRES_IN_MAX` (a provider's
    1e300 or Infinity means "does not expire" for us, not a crash). A string of digits is read as its number (some
    providers, Azure AD v1 among them, send `"3599"`). Anything else but a positive JSON number (missing, other
    strings, a boolean, NaN, zero, negative) is an unknown expiry: None."""
    if isinstance(expires_in, str) and (digits := expires_in.strip()).isascii() and digits.isdigit():
        expires_in = int(digits[:12])  # at most ~31,000 years: clamped below anyway
    if not isinstance(expires_in, (int, float)) or isinstance(expires_in, bool) or not expires_in > 0:
        return None
    return timezone.now() + timedelta(seconds=min(expires_in, EXPIRES_IN_MAX.total_seconds()) // 1)


def authorization_code_exchange(
    application: ProviderApplication,
    *,
    code: str,
    redirect_uri: str,
    code_verifier: str,
    session: requests.Session | None = None,
) -> TokenSet:
    """Trade the authorization code for tokens (with the PKCE verifier of the authorization request)."""
    return token_request(
        application,
        {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": redirect_uri,
            "client_id": application.client_id,
            "code_verifier": code_verifier,
        },
        session=session,
    )


def token_refresh(
    application: ProviderApplication, *, refresh_token: str, session: requests.Session | None = None
) -> TokenSet:
    """New tokens for a refresh token."""
    return token_request(application, {"grant_type": "refresh_token", "refresh_token": refresh_token}, session=session)
