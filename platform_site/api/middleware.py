"""Middleware of the request path (settings.MIDDLEWARE)."""

import logging

from django.core.exceptions import DisallowedHost

from platform_site.api import errors, request_ids

security_logger = logging.getLogger("django.security.DisallowedHost")


class HostCheckMiddleware:
    """A request for a host not in ALLOWED_HOSTS is the 400 problem document of `errors.handler400` in debug mode
    too: Django raised it inside CommonMiddleware, and in debug mode answered its HTML debug page (the request's
    headers and environment, the settings) instead of calling the handler. Outermost, so no other middleware asks
    for the host first; logged as Django logs it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return host_refusal(request) or self.get_response(request)


def host_refusal(request):
    """The 400 problem document for a request whose host is not in ALLOWED_HOSTS (logged as Django logs it), or None.
    Also `make run`'s static files' (`serve.ProblemStaticFilesHandler`), served before any middleware."""
    try:
        request.get_host()
    except DisallowedHost as exc:
        security_logger.error(str(exc), extra={"status_code": 400, "request": request})
        return errors.handler400(request, exc)
    return None


class DatabaseOutageMiddleware:
    """A view outside DRF (the admin, the API's documentation) that failed because the database cannot be reached
    now, or was busy past its wait, answers the 503 problem document of the API's views, with Retry-After
    (`errors.database_outage`), not the 500 of a fault. The magic link pages answer a page of their own first."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        return errors.database_outage(request, exception)


class ResponseHeadersMiddleware:
    """Headers every answer of the API gets right (outermost, so the refusal of a host has them too):
    - an answer to a request with credentials (`Authorization`) is one owner's data, which no cache may keep:
      `Cache-Control: no-store` unless the view said otherwise (a shared cache that did not know such answers are
      private could serve one owner's to another);
    - a 204 or 304 has no Content-Length (RFC 9110 8.6: Django's CommonMiddleware gave every answer one);
    - `X-Request-Id`, the request's id, which every log line written while it is served carries too
      (`platform_site.api.request_ids`);
    - `Accept-Patch` on the OPTIONS of a resource that takes PATCH, and on a PATCH's 415."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        request.request_id = request_ids.request_id(request.META)
        with request_ids.serving(request.request_id):
            return answer_headers(request, self.get_response(request))


def answer_headers(request, response, *, owners_data: bool = True):
    """`response` with the headers of `ResponseHeadersMiddleware`, and its Content-Length where it has none (an
    answer made before the middleware, `platform_site.wsgi.Handler`'s, has none from CommonMiddleware, nor an id).
    `owners_data` False: an answer that is nobody's data (a static file), which caches may keep whoever asks."""
    if not hasattr(request, "request_id"):
        request.request_id = request_ids.request_id(request.META)
    response[request_ids.HEADER] = request.request_id
    if _patch_answered(request, response):
        # RFC 5789 2.2, 3.1: the patch formats taken (every PATCH reads a JSON object of the keys to change).
        response["Accept-Patch"] = "application/json"
    if owners_data and "HTTP_AUTHORIZATION" in request.META and not response.has_header("Cache-Control"):
        response["Cache-Control"] = "no-store"
    if response.status_code in (204, 304):
        if response.has_header("Content-Length"):
            del response["Content-Length"]
    elif not response.streaming and not response.has_header("Content-Length"):
        response["Content-Length"] = str(len(response.content))
    return response


def _patch_answered(request, response) -> bool:
    """An answer that says which patch formats the resource takes: its OPTIONS, and a PATCH's 415."""
    allowed = {method.strip() for method in response.get("Allow", "").split(",")}
    return "PATCH" in allowed and (
        request.method == "OPTIONS" or (request.method == "PATCH" and response.status_code == 415)
    )
