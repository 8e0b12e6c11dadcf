"""The admin site: Django's, its login saying when it is refused for too many failures (`OwnerLoginForm`) and
answering that refusal as the API does, and refusing a NUL in its URLs (`OwnerAdminSite`). Its own module:
`PlatformAdminConfig` names the site before any app's admin module registers on it."""

import math
from functools import wraps

from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.core.exceptions import ValidationError
from django.utils.translation import ngettext

from platform_site.api.errors import malformed_request


class OwnerLoginForm(AdminAuthenticationForm):
    """The admin's login, saying so while logins from here are refused for too many failures (`throttle`, the API's
    429 `tooManyRequests`): the backend refuses a right password too then, and "Please enter the correct username
    and password" sent an operator who had typed it right to look for another."""

    def get_invalid_login_error(self):
        wait = getattr(self.request, "login_refused_for", None)
        if wait is None:
            return super().get_invalid_login_error()
        minutes = max(1, math.ceil(wait / 60))
        message = ngettext(
            "Too many failed logins; try again in %(minutes)d minute.",
            "Too many failed logins; try again in %(minutes)d minutes.",
            minutes,
        )
        return ValidationError(message, code="login_refused", params={"minutes": minutes})


class OwnerAdminSite(admin.AdminSite):
    """Django's admin site, its login refused for too many failures answering as the API's does: 429 with
    `Retry-After` (the page, saying so, is the body). It answered 200, which a script or a monitor reads as a login
    page served as usual."""

    login_form = OwnerLoginForm

    def admin_view(self, view, cacheable=False):
        """Every view of the site (once the user may see it) refuses a URL whose path or query holds a NUL, a 400:
        PostgreSQL refuses the character in any text it compares, so a list filter or a text id with one was a 500
        there (and matched nothing on SQLite). The API refuses it as well (its path ids 404, its filters 400)."""

        @wraps(view)
        def refusing_nul(request, *args, **kwargs):
            query = request.GET.lists()
            if "\x00" in request.path or any("\x00" in key or any("\x00" in v for v in vs) for key, vs in query):
                # (answered, not raised: Django logged each raised one with its traceback)
                return malformed_request(request, "A URL of the admin cannot hold a NUL character.")
            return view(request, *args, **kwargs)

        return super().admin_view(refusing_nul, cacheable)

    def login(self, request, extra_context=None):
        response = super().login(request, extra_context)
        wait = getattr(request, "login_refused_for", None)
        if wait is not None and response.status_code == 200:
            response.status_code = 429
            response["Retry-After"] = str(wait)
        return response
