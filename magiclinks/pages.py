"""The pages an end user opens from a magic link, at `/links/<token>`: no token of ours, no JavaScript
needed for the basic flow (the batch status page polls with JavaScript; without, the user follows its "Refresh
status" link: no page reloads itself, WCAG F41).

The token in the URL is the only credential, so every page is `no-store`, not indexed, and sends the
Referer only to ourselves (`same-origin`: a logo host or a provider never sees the token; `no-referrer`
would make browsers send `Origin: null` on our own forms, which the CSRF check refuses). A content security policy
keeps a page to our own script and forms, should a text of the owner's ever slip past escaping."""

import secrets
from functools import wraps

from django.db import DatabaseError, OperationalError
from django.http import HttpResponseRedirect, JsonResponse, UnreadablePostError
from django.shortcuts import render
from django.urls import reverse
from django.utils.cache import add_never_cache_headers
from django.views.csrf import csrf_failure as django_csrf_failure
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from assets.models import Provider
from platform_site.api.errors import (
    PROBLEM_CONTENT_TYPE,
    DomainError,
    InsufficientStorage,
    database_retry_after,
    problem_body,
    storage_full,
)
from platform_site.text import binary_size

from . import services
from .models import MagicLink

BROWSER_COOKIE = "magiclink_browser"
RETURN_COOKIE = "magiclink_return"
COOKIE_PATH = "/links/"
UPLOAD_PROVIDERS = Provider.values
TRY_AGAIN = {
    "title": "Try again in a moment",
    "message": "This page cannot be shown right now: the service is busy or restarting. Try again in a few seconds.",
}
UNAVAILABLE = {
    "unknown": ("Link not found", "This link does not exist. Check that you copied the whole address."),
    "unknown batch": ("Upload not found", "This link has no upload at this address. Open the link again to upload."),
    "expired": ("This link has expired", "Ask the service that sent it to you for a new link."),
    "revoked": ("This link is no longer valid", "It was withdrawn. Ask the service that sent it for a new one."),
    "unavailable": ("This link is not available", services.UNAVAILABLE_MESSAGE),
}


# What a page may load and do: our own style sheet and script, the owner's logo and header image (http(s) URLs, as
# `settings` takes them), its colours (the body's inline style), forms posting to us only, never framed.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; img-src 'self' https: http:; style-src 'self' 'unsafe-inline'; script-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'; object-src 'none'"
)


def _secure(response):
    add_never_cache_headers(response)
    response["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    response["Referrer-Policy"] = "same-origin"
    response["X-Robots-Tag"] = "noindex, nofollow"
    response["X-Content-Type-Options"] = "nosniff"
    return response


def _see_other(url: str):
    """A 303 to `url` (a GET of it, whatever the request's method), with the pages' headers."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return _secure(response)


# Black, not a softer dark grey: with black and white to choose from, the better one contrasts at least 4.58:1 with
# any background (with #111111, #777777 to #7B7B7B reached 4.35-4.48:1 whichever was chosen).
DARK_TEXT, LIGHT_TEXT = "#000000", "#FFFFFF"


def _luminance(color: str) -> float:
    """WCAG 2 relative luminance of a `#RRGGBB` colour (ValueError for anything else)."""
    if len(color) != 7 or color[0] != "#":
        raise ValueError(color)
    channels = [int(color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast_ratio(first: str, second: str) -> float:
    """WCAG 2 contrast ratio of two `#RRGGBB` colours (1 to 21)."""
    lighter, darker = sorted((_luminance(first), _luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def _text_color(background: str) -> str:
    """The text colour the pages render (black or white), whichever contrasts more with the background (`DARK_TEXT`):
    at least 4.58:1, WCAG AA for text of any size."""
    try:
        dark, light = _contrast_ratio(background, DARK_TEXT), _contrast_ratio(background, LIGHT_TEXT)
    except (ValueError, TypeError):
        return DARK_TEXT
    return DARK_TEXT if dark >= light else LIGHT_TEXT


def _branding(link: MagicLink | None) -> dict:
    values = dict(services.DEFAULT_SETTINGS) | ((link.settings or {}) if link else {})
    background = values.get("backgroundColor") or "#F5F5F5"
    user_name = ""
    if link is not None and values.get("showLeafUserName"):
        user_name = link.core_user.name or link.core_user.email or ""
    return {
        "background": background,
        "foreground": _text_color(background),
        "company_name": values.get("companyName") or "",
        "company_logo": values.get("companyLogo") or "",
        "header_image": values.get("headerImage") or "",
        "user_name": user_name,
    }


def _page(request, template: str, context: dict, *, link: MagicLink | None = None, status: int = 200):
    response = render(request, f"magiclinks/{template}", {**_branding(link), **context, "link": link}, status=status)
    return _secure(response)


def _allow(*methods: str):
    """The page answers `methods` only; any other is the 405 page (with `Allow`), before the CSRF check: the CSRF
    middleware answered Django's own 403 page ("CSRF verification failed") to a DELETE or a PUT, though this page
    takes neither and changes nothing for them. A page taking POST checks CSRF itself (`csrf_protect`). A database
    that cannot be reached or is busy with another change is the page saying to try again (503, `Retry-After`), as
    the API's 503 says it: it was the 500 of a fault, a problem document in JSON."""

    def decorate(view):
        @wraps(view)
        def allowed(request, *args, **kwargs):
            if request.method not in methods:
                listed = ", ".join(methods[:-1]) + " and " + methods[-1] if len(methods) > 1 else methods[0]
                message = f"This address answers {listed} only."
                response = _page(
                    request, "unavailable.html", {"title": "Not available", "message": message}, status=405
                )
                response["Allow"] = ", ".join(methods)
                return response
            try:
                return view(request, *args, **kwargs)
            except DatabaseError as exc:
                if (wait := database_retry_after(exc)) is None:
                    raise
                response = _page(request, "unavailable.html", TRY_AGAIN, status=503)
                response["Retry-After"] = str(wait)
                return response

        return csrf_exempt(allowed)

    return decorate


def _unavailable_words(exc: services.LinkUnavailable) -> tuple[str, str]:
    """The title and message that say why a link cannot be used."""
    return UNAVAILABLE.get(exc.reason, UNAVAILABLE["unknown"])


def _unavailable(request, exc: services.LinkUnavailable):
    title, message = _unavailable_words(exc)
    return _page(request, "unavailable.html", {"title": title, "message": message}, status=exc.status)


def _browser_nonce(request) -> str:
    """This browser's nonce (from its cookie), or a new one."""
    nonce = request.COOKIES.get(BROWSER_COOKIE) or ""
    return nonce if len(nonce) >= 32 else secrets.token_urlsafe(32)


def _provider_context(link: MagicLink, token: str) -> dict:
    connections = services.link_connections(link)
    set_up = services.link_providers_set_up(link)
    rows = []
    for provider in link.providers:
        credential = connections.get(provider)
        rows.append(
            {
                "name": provider,
                "state": "none" if credential is None else credential.status.lower(),
                "connect_url": reverse("magiclink-connect", args=[token, provider]) if provider in set_up else None,
            }
        )
    return {
        "providers": rows,
        "disconnect_enabled": bool(link.settings.get("disconnectedEnabled")),
        "disconnect_url": reverse("magiclink-disconnect", args=[token]),
    }


def _upload_limit() -> str:
    """The configured upload limit for people (`3 GiB`)."""
    from conversion.uploads import upload_max_bytes

    return binary_size(upload_max_bytes())


def _upload_context(token: str, **extra) -> dict:
    return {
        "upload_url": reverse("magiclink-upload", args=[token]),
        "upload_limit": _upload_limit(),
        "upload_providers": UPLOAD_PROVIDERS,
        "selected_provider": extra.pop("selected_provider", Provider.OTHER),
        **extra,
    }


@_allow("GET", "HEAD")
def link_page(request, token: str):
    """The page of a link: provider buttons, or the upload form. Counts the visit (a GET, not a HEAD)."""
    try:
        link = services.magic_link_open(token, count=request.method == "GET")
    except services.LinkUnavailable as exc:
        return _unavailable(request, exc)
    if link.widget == MagicLink.Widget.FILEUPLOAD:
        return _page(request, "upload.html", _upload_context(token), link=link)
    return _page(request, "providers.html", _provider_context(link, token), link=link)


@_allow("GET")
def link_connect(request, token: str, provider: str):
    """Start the OAuth 2.0 authorization-code flow: redirect to the provider's authorize URL. The browser
    gets a nonce cookie (the callback must come back to the same browser) and, signed, the link's token
    (so the callback can lead back to the link's page)."""
    try:
        link = services.magic_link_resolve(token)
        if link.widget == MagicLink.Widget.FILEUPLOAD:
            raise services.LinkUnavailable(404, "unknown")
        nonce = _browser_nonce(request)
        target = services.oauth_authorization_start(link=link, provider=provider, browser_nonce=nonce)
    except services.LinkUnavailable as exc:
        return _unavailable(request, exc)
    except services.AuthorizationRefused as exc:
        return _outcome(request, exc.link, token, provider, ok=False, message=exc.message, status=exc.status)
    response = _secure(HttpResponseRedirect(target))
    response.set_cookie(
        BROWSER_COOKIE, nonce, max_age=3600, path=COOKIE_PATH, httponly=True, samesite="Lax",
        secure=request.is_secure(),
    )  # fmt: skip
    response.set_signed_cookie(
        RETURN_COOKIE, token, salt=RETURN_COOKIE, max_age=3600, path=COOKIE_PATH, httponly=True, samesite="Lax",
        secure=request.is_secure(),
    )  # fmt: skip
    return response


def _return_token(request, link: MagicLink | None) -> str | None:
    """The link's token from the signed cookie, when it belongs to `link`."""
    if link is None:
        return None
    token = request.get_signed_cookie(RETURN_COOKIE, default=None, salt=RETURN_COOKIE)
    if token and services.token_hash(token) == link.token_hash:
        return token
    return None


# An outcome of these statuses is the link's own state (revoked or expired, its API owner deactivated): its page and
# buttons would only answer the same, so they are not offered.
LINK_GONE_STATUSES = (403, 410)


def _outcome(request, link, token, provider, *, ok: bool, message: str, status: int, link_gone: bool | None = None):
    context = {"ok": ok, "message": message, "provider": provider, "back_url": None}
    if link_gone is None:
        link_gone = status in LINK_GONE_STATUSES
    if link is not None and token and not link_gone:
        context["back_url"] = reverse("magiclink-page", args=[token])
        upload_link = link.widget == MagicLink.Widget.FILEUPLOAD
        context["back_label"] = "Back to the upload page" if upload_link else "Back to your providers"
        if not upload_link:
            context.update(_provider_context(link, token))
    return _page(request, "outcome.html", context, link=link, status=status)


@_allow("GET")
def oauth_callback(request):
    """The provider sends the user back here with `code` and `state` (or `error`)."""
    try:
        result = services.oauth_authorization_complete(
            state=request.GET.get("state", ""),
            code=request.GET.get("code"),
            error=request.GET.get("error"),
            browser_nonce=request.COOKIES.get(BROWSER_COOKIE, ""),
        )
    except services.AuthorizationRefused as exc:
        token = _return_token(request, exc.link)
        return _outcome(request, exc.link, token, None, ok=False, message=exc.message, status=exc.status)
    token = _return_token(request, result.link)
    message = f"You are connected to {result.provider}."
    if result.scopes_missing:
        message += f" It did not grant everything asked for (missing: {', '.join(result.scopes_missing)})."
    return _outcome(request, result.link, token, result.provider, ok=True, message=message, status=200)


@_allow("POST")
@csrf_protect
def link_disconnect(request, token: str):
    """The end user disconnects a provider (only offered when the link's settings allow it)."""
    try:
        link = services.magic_link_resolve(token)
        provider = request.POST.get("provider", "")
        disconnected = services.link_disconnect(link=link, provider=provider)
    except services.LinkUnavailable as exc:
        return _unavailable(request, exc)
    except services.AuthorizationRefused as exc:
        return _outcome(request, link, token, None, ok=False, message=exc.message, status=exc.status)
    if disconnected:
        message = f"You are disconnected from {provider}."
    else:  # nothing to do (another tab disconnected it, or it never connected): said, not claimed done
        message = f"You were not connected to {provider}."
    return _outcome(request, link, token, provider, ok=True, message=message, status=200)


@_allow("GET", "HEAD", "POST")
def link_upload(request, token: str):
    """Receive the zip: the link is checked before a byte of the body is read, the body streams through
    the batch pipeline's upload handler (size cap, zip check), then the CSRF token is checked.

    A GET or HEAD is sent to the link's page (303), or answered what that page would answer when the link cannot be
    used (404, 410, 403): after a refused upload the browser's address is this one, and Enter in its address bar
    answered a 405 with no way back."""
    if request.method in ("GET", "HEAD"):
        try:
            services.magic_link_resolve(token)
        except services.LinkUnavailable as exc:
            return _unavailable(request, exc)
        return _see_other(reverse("magiclink-page", args=[token]))
    try:
        link = services.magic_link_resolve(token)
        if link.widget != MagicLink.Widget.FILEUPLOAD:
            raise services.LinkUnavailable(404, "unknown")
    except services.LinkUnavailable as exc:
        return _unavailable(request, exc)
    from conversion.uploads import UploadTooLarge, upload_parse

    try:
        upload_parse(request)  # the body parsed now, through the streaming handler
    except UnreadablePostError:  # it stopped arriving (the server's read timed out, or the connection broke)
        return _upload_error(
            request, link, token, "The upload stopped arriving before it was complete. Try again.", 408
        )
    except UploadTooLarge:
        message = f"The file is larger than the limit of {_upload_limit()}. Upload a smaller .zip file."
        return _upload_error(request, link, token, message, 413)
    except DomainError as exc:
        return _upload_error(request, link, token, exc.detail, exc.status_code)
    return _link_upload_checked(request, link, token)


@csrf_protect
def _link_upload_checked(request, link: MagicLink, token: str):
    upload = request.FILES.get("file")
    provider = request.POST.get("provider") or Provider.OTHER
    if provider not in UPLOAD_PROVIDERS:
        return _upload_error(request, link, token, "Choose where the files come from.", 400, field="provider")
    if upload is None:
        # Also what a client sees whose file name is not UTF-8: Django drops that part's headers, and so the part.
        message = (
            "Choose a .zip file to upload. If you chose one, it did not arrive whole, or its name is not UTF-8 text: "
            "rename it and try again."
        )
        return _upload_error(request, link, token, message, 400, provider)
    try:
        batch = services.link_upload(link=link, provider=provider, upload=upload)
    except services.LinkUnavailable as exc:  # revoked, expired or its user deleted while the body streamed in
        return _unavailable(request, exc)
    except DomainError as exc:
        return _upload_error(request, link, token, exc.detail, exc.status_code, provider)
    except (OSError, OperationalError) as exc:
        if not storage_full(exc):
            raise
        # The link's own record of the upload, or the commit, found the database full (the batch's own writes say
        # so themselves): the page says it, as the API's 507 does; the stored zip goes with the storage sweep.
        error = InsufficientStorage()
        return _upload_error(request, link, token, error.detail, error.status_code, provider)
    return _see_other(reverse("magiclink-batch", args=[token, batch.pk]))


def _upload_error(request, link, token, message: str, status: int, provider: str = Provider.OTHER, field: str = "file"):
    """The upload form again, with `message` first on the page (an alert), tied to the `field` it is about (described
    by it, invalid, focused on load) and "Error: " leading the page's title."""
    context = _upload_context(token, error=message, error_field=field, selected_provider=provider)
    response = _page(request, "upload.html", context, link=link, status=status)
    if status == InsufficientStorage.status_code:
        response["Retry-After"] = str(InsufficientStorage.wait)
    return response


def _progress_or_404(token: str, batch_id):
    link = services.magic_link_resolve(token, allow_expired=True)
    return link, services.link_batch_progress(link=link, batch_id=batch_id)


@_allow("GET", "HEAD")
def batch_page(request, token: str, batch_id):
    """Live status of an uploaded batch (JavaScript polling; without it, a "Refresh status" link to follow)."""
    try:
        link, progress = _progress_or_404(token, batch_id)
    except services.LinkUnavailable as exc:
        return _unavailable(request, exc)
    context = {
        "batch": progress,
        "finished": progress["status"] in FINAL_STATUSES,
        "status_url": reverse("magiclink-batch-status", args=[token, batch_id]),
        "page_url": reverse("magiclink-batch", args=[token, batch_id]),
        "upload_page_url": reverse("magiclink-page", args=[token]),
        # An expired link still shows its uploads' progress, but its page (410) takes no more.
        "link_expired": link.expired,
    }
    return _page(request, "batch.html", context, link=link)


COMPACT = {"separators": (",", ":")}  # JSON as the API writes it


@_allow("GET", "HEAD")
def batch_status(request, token: str, batch_id):
    """The batch's progress as JSON, for the status page's polling."""
    try:
        _link, progress = _progress_or_404(token, batch_id)
    except services.LinkUnavailable as exc:
        title, message = _unavailable_words(exc)
        body = problem_body(
            status_code=exc.status, error_key=LINK_PROBLEMS[exc.status], detail=f"{title}. {message}", path=request.path
        )
        return _secure(
            JsonResponse(body, status=exc.status, content_type=PROBLEM_CONTENT_TYPE, json_dumps_params=COMPACT)
        )
    return _secure(JsonResponse(progress, json_dumps_params=COMPACT))


# The problem a link's status JSON answers when the link cannot be used (`services.LinkUnavailable`'s statuses).
LINK_PROBLEMS = {404: "notFound", 410: "magicLinkExpired", 403: "magicLinkUnavailable"}


FINAL_STATUSES = ("PROCESSED", "FAILED")


CSRF_REFUSED = (
    "This form has expired, or your browser did not send its cookie back. Go back to the page, reload it and try "
    "again (the page needs cookies from this site)."
)


def csrf_failure(request, reason=""):
    """Django's CSRF refusal (`CSRF_FAILURE_VIEW`): on a link's page, a 403 page of the link saying what to do
    (Django's own page, in English and unbranded, asked to turn DEBUG on); anywhere else (the admin), Django's."""
    match = request.resolver_match
    token = match.kwargs.get("token") if match is not None and (match.url_name or "").startswith("magiclink-") else None
    if token is None:
        return django_csrf_failure(request, reason)
    try:
        link = services.magic_link_resolve(token)
    except services.LinkUnavailable as exc:
        return _unavailable(request, exc)
    return _outcome(request, link, token, None, ok=False, message=CSRF_REFUSED, status=403, link_gone=False)
