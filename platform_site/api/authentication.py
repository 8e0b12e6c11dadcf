"""Bearer JWT authentication for every endpoint but `/api/authenticate`.

Tokens are HS256 JWTs signed with SECRET_KEY. They carry a fingerprint of the owner's password
hash, so changing the password revokes every token issued before; an inactive owner's tokens are refused
while it stays inactive (Django's rule for sessions too).

On a `/users/{coreUserId}/...` route the owner and that core user are read in one query (one database
round trip fewer on most requests); the view takes the core user from `request.core_user_lookup`. On PostgreSQL what
was read is kept between requests until a change to either row is announced (`owner_cache`): the token is still
judged on every request, against the owner's current password and state.
"""

import hashlib
import hmac
import re
from datetime import UTC, datetime

import jwt
from django.apps import apps
from django.conf import settings
from django.contrib.auth import get_user_model
from rest_framework import authentication, exceptions

from platform_site.api.lookups import row_get, row_get_with_child
from platform_site.api.owner_cache import owner_lookup

ALGORITHM = "HS256"
CLOCK_LEEWAY_SECONDS = 5
# The challenge every 401 carries (RFC 9110 requires one; `errors.problem_exception_handler` adds it to each): the
# bearer token is the API's only scheme.
BEARER_CHALLENGE = 'Bearer realm="api"'
# Three base64url parts. PyJWT's decoder skips characters outside the alphabet, so `<token>!!` would pass.
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")


def _password_fingerprint(user) -> str:
    return hmac.new(settings.SECRET_KEY.encode(), user.password.encode(), hashlib.sha256).hexdigest()[:16]


def token_issue(user, *, remember_me: bool = False) -> str:
    """A signed token for an API owner: 24 h, or 30 days with `remember_me`."""
    now = datetime.now(UTC)
    lifetime = settings.JWT_REMEMBER_ME_LIFETIME if remember_me else settings.JWT_LIFETIME
    claims = {
        "sub": str(user.pk),
        "username": user.get_username(),
        "iat": now,
        "exp": now + lifetime,
        "pwd": _password_fingerprint(user),
    }
    return jwt.encode(claims, settings.SECRET_KEY, algorithm=ALGORITHM)


def _core_user_id(request) -> str | None:
    """The `{coreUserId}` of the route, when the view is core-user-scoped (it names its URL kwarg)."""
    context = getattr(request, "parser_context", None) or {}
    kwarg = getattr(context.get("view"), "core_user_url_kwarg", None)
    return context.get("kwargs", {}).get(kwarg) if kwarg else None


def _owner_and_core_user(owner_id, core_user_id) -> tuple:
    """The owner of id `owner_id` and, when `core_user_id` is not None, its core user of that id, in one query:
    (owner or None, core user or None)."""
    if core_user_id is None:
        return row_get(get_user_model(), id=owner_id), None
    # The model is looked up, not imported: DRF imports this module when `rest_framework.views` is imported, which
    # must not need the app registry.
    core_user_model = apps.get_model("accounts", "CoreUser")
    return row_get_with_child(get_user_model(), owner_id, core_user_model, "owner", core_user_id)


class OwnerDeactivated(exceptions.AuthenticationFailed):
    """401 `ownerDeactivated`: a valid token, or a login with the right password, of an API owner that is deactivated.
    Said only to whoever shows the token or the password: anyone else is told what any wrong credentials get."""

    default_detail = "This API owner is deactivated: its tokens and logins are refused until it is reactivated."


class BearerTokenAuthentication(authentication.BaseAuthentication):
    """`Authorization: Bearer <JWT>`; anything missing, malformed, expired or revoked is a 401."""

    def authenticate(self, request):
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, token = header.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise exceptions.AuthenticationFailed("The Authorization header must be 'Bearer <token>'.")
        if not TOKEN_SHAPE.fullmatch(token):
            raise exceptions.AuthenticationFailed("The token is not valid.")
        try:
            claims = jwt.decode(
                token,
                settings.SECRET_KEY,
                algorithms=[ALGORITHM],
                options={"require": ["exp", "iat", "sub"]},
                # Hosts' clocks differ a little: a token issued on one whose clock is ahead was "issued in the
                # future" on another for that long.
                leeway=CLOCK_LEEWAY_SECONDS,
            )
        except jwt.ExpiredSignatureError as exc:
            raise exceptions.AuthenticationFailed("The token has expired; authenticate again.") from exc
        except jwt.InvalidTokenError as exc:
            raise exceptions.AuthenticationFailed("The token is not valid.") from exc
        core_user_id = _core_user_id(request)
        user, core_user = owner_lookup(
            (claims["sub"], core_user_id),
            lambda: _owner_and_core_user(claims["sub"], core_user_id),
            # (kept only when what was asked for exists: a core user created later must be found at once)
            complete=lambda pair: pair[0] is not None and (core_user_id is None or pair[1] is not None),
        )
        if user is None or not hmac.compare_digest(str(claims.get("pwd", "")), _password_fingerprint(user)):
            raise exceptions.AuthenticationFailed("The token has been revoked; authenticate again.")
        if not user.is_active:  # (not revoked: the token works again once the owner is reactivated)
            raise OwnerDeactivated()
        if core_user_id is not None:
            # (the id asked for, the owner's core user of that id or None): see CoreUserScopedViewSet.core_user
            request.core_user_lookup = (core_user_id, core_user)
        return user, claims

    def authenticate_header(self, request):
        return BEARER_CHALLENGE
