"""Middleware of the request path (settings.MIDDLEWARE)."""

import logging

from django.core.exceptions import DisallowedHost

from platform_site.api import errors

security_logger = logging.getLogger("django.security.DisallowedHost")


class HostCheckMiddleware:
    """A request for a host not in ALLOWED_HOSTS is the 400 problem document of `errors.handler400` in debug mode
    too: Django raised it inside CommonMiddleware, and in debug mode answered its HTML debug page (the request's
    headers and environment, the settings) instead of calling the handler. Outermost, so no other middleware asks
    for the host first; logged as Django logs it."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            request.get_host()
        except DisallowedHost as exc:
            security_logger.error(str(exc), extra={"status_code": 400, "request": request})
            return errors.handler400(request, exc)
        return self.get_response(request)
