"""How an API owner's password is checked at login.

Django's backend upgrades a password's hash when it logs in with it (new iteration count, new salt: at most Django
upgrades). A token carries a fingerprint of the hash (`platform_site.api.authentication`), so that upgrade revoked
every token of the owner although the password had not changed. Here the login checks the password and leaves the
hash as it is; it is upgraded when the password is next set.

A login over HTTP (with a request) is also refused while its user name and address, or its address, have failed
too often (`throttle`): Django's `authenticate` then answers None, and the request says for how long
(`request.login_refused_for`, seconds) so the API can answer 429. The right password of a deactivated owner is no
login either; the request says so (`request.owner_deactivated`), and the API answers that the owner is deactivated.
"""

from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.hashers import check_password
from django.core.exceptions import PermissionDenied

from . import throttle


class OwnerBackend(ModelBackend):
    """ModelBackend without the hash upgrade at login (same lookups, same timing for an unknown user)."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        owner_model = get_user_model()
        if username is None:
            username = kwargs.get(owner_model.USERNAME_FIELD)
        if username is None or password is None:
            return None
        if request is None:
            return self._check(owner_model, username, password)
        address = request.META.get("REMOTE_ADDR") or ""
        wait = throttle.login_attempt(username, address)  # (counted as failed until the password is right)
        if wait is not None:
            request.login_refused_for = wait
            raise PermissionDenied  # `authenticate` asks no other backend, and answers None
        owner = self._check(owner_model, username, password, request)
        if owner is not None:
            throttle.login_succeeded(username, address)
        return owner

    def _check(self, owner_model, username, password, request=None):
        try:
            owner = owner_model._default_manager.get_by_natural_key(username)
        except owner_model.DoesNotExist:
            owner_model().set_password(password)  # as long as a known owner's check takes (Django's rule)
            return None
        if not check_password(password, owner.password):
            return None
        if not self.user_can_authenticate(owner):
            if request is not None:  # the right password of a deactivated owner: the API says so (Django's form too)
                request.owner_deactivated = True
            return None
        return owner
