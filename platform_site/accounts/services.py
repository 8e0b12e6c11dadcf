"""Business rules of API owners and core users."""

from django.contrib.auth import authenticate, get_user_model
from django.db import IntegrityError, transaction

from platform_site.api.authentication import token_issue
from platform_site.api.errors import ConflictError, DomainError

from .models import CoreUser

USER_FIELDS = ("name", "email", "phone", "address", "external_id")


class InvalidCredentials(DomainError):
    status_code = 401
    error_key = "invalidCredentials"


def owner_authenticate(*, username: str, password: str, remember_me: bool = False) -> str:
    """A bearer token for the API owner with these credentials, or 401."""
    user = authenticate(username=username, password=password)
    if user is None or not user.is_active:
        raise InvalidCredentials("Unknown username or wrong password.")
    return token_issue(user, remember_me=remember_me)


@transaction.atomic
def owner_ensure(*, username: str, password: str, is_staff: bool = False):
    """Create the API owner, or set its password when it exists (idempotent). Returns (owner, created)."""
    owner, created = get_user_model().objects.get_or_create(username=username)
    owner.set_password(password)
    owner.is_active = True
    if is_staff:
        owner.is_staff = owner.is_superuser = True
    owner.save()
    return owner, created


def _external_id_conflict(external_id: str | None) -> ConflictError:
    return ConflictError(
        f"A core user with externalId '{external_id}' already exists.",
        error_key="externalIdTaken",
        field_errors=[{"field": "externalId", "message": "Already used by another core user of this API owner."}],
    )


def core_user_create(*, owner, **values) -> CoreUser:
    """A new core user; `externalId` is unique per API owner (409 otherwise)."""
    try:
        with transaction.atomic():
            return CoreUser.objects.create(owner=owner, **values)
    except IntegrityError:
        raise _external_id_conflict(values.get("external_id")) from None


def core_user_replace(*, core_user: CoreUser, **values) -> CoreUser:
    """Full replacement: every field not sent goes back to empty."""
    for field in USER_FIELDS:
        setattr(core_user, field, values.get(field, None if field == "external_id" else ""))
    try:
        with transaction.atomic():
            core_user.save()
    except IntegrityError:
        raise _external_id_conflict(values.get("external_id")) from None
    return core_user


@transaction.atomic
def core_user_delete(*, core_user: CoreUser) -> None:
    """Delete a core user and, by cascade, everything of theirs."""
    core_user.delete()
