"""Business rules of API owners and core users."""

from datetime import timedelta

from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.hashers import check_password
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from platform_site.api.authentication import OwnerDeactivated, token_issue
from platform_site.api.errors import NOT_FOUND, ConflictError, DomainError, NotFoundError
from platform_site.db import DEADLOCK, row_locked, rows_kept, sqlstate, transaction_lock, uuid_lock_key

from . import oauth
from .crypto import secret_unreadable
from .models import EXTERNAL_ID_IN_USE, CoreUser, ProviderApplication, ProviderCredential
from .signals import core_user_deleting

USER_FIELDS = ("name", "email", "phone", "address", "external_id")
USERNAME_MAX = 150  # Django's user name column
PASSWORD_MIN, PASSWORD_MAX = 8, 1024  # what `createapiowner` sets is what `POST /api/authenticate` takes


def core_user_lock(core_user_id) -> bool:
    """Lock the core user's row until the transaction ends: the one point where the writes of one core user that
    must not interleave (merges, operation grouping and builds, asset pooling, auto-merges, field deletion, file
    completion) queue up; take it before any other row those writes lock. FOR NO KEY UPDATE: those writes wait for
    each other, and the user's deletion for them, but the writes that only keep the user (`core_user_keep`: a
    field renamed, a farm, a machine...) do not wait for them, nor they for those. (FOR UPDATE waited for every
    keeper, and PostgreSQL lets a new keeper in ahead of it: under a stream of changes of the user's fields it never
    came.) Returns whether the user is still there. The lock is a no-op on SQLite, whose writers are serial
    anyway. Like every write of the user, it passes the deletion's gate first (`_deletion_gate`)."""
    _deletion_gate(core_user_id)
    return row_locked(CoreUser, core_user_id, no_key=True)


def core_user_keep(core_user_id, *, missing_ok: bool = False) -> bool:
    """Keep the core user from being deleted until the transaction ends, before writing rows of theirs (a field, a
    farm, a machine, a configuration, a link...): their deletion waits for the write, or the write for the deletion
    and then finds the user gone: 404 `notFound` (False with `missing_ok`). Concurrent writes of one user do not
    wait for each other (`platform_site.db.rows_kept`), and pass the deletion's gate first (`_deletion_gate`)."""
    _deletion_gate(core_user_id)
    if rows_kept(CoreUser, [core_user_id]):
        return True
    if missing_ok:
        return False
    raise NotFoundError(NOT_FOUND)


def _deletion_gate(core_user_id) -> None:
    """A write of the user waits here while the user's deletion runs (the deletion's advisory lock, taken shared
    until the transaction ends), and the deletion waits for the writes already past it, before either locks a row of
    the user's. Without it, writes that kept coming (two or three clients renaming fields, replacing farms) each kept
    the user the deletion was waiting to delete, then waited for a row the deletion had taken: a deadlock a second,
    the deletion stalled for minutes and often failed (503, or 409 for the rows the writes added)."""
    transaction_lock(CORE_USER_DELETION_LOCK_CLASS, uuid_lock_key(core_user_id), shared=True)


class InvalidCredentials(DomainError):
    status_code = 401
    error_key = "invalidCredentials"


class LoginRefused(DomainError):
    status_code = 429
    error_key = "tooManyRequests"

    def __init__(self, wait: int):
        super().__init__(f"Too many failed logins: try again in {wait} s.")
        self.wait = wait


def owner_authenticate(*, username: str, password: str, remember_me: bool = False, request=None) -> str:
    """A bearer token for the API owner with these credentials, or 401; 429 while this login is refused for
    too many failures (`throttle`: counted for requests only)."""
    user = authenticate(request, username=username, password=password)
    wait = getattr(request, "login_refused_for", None)
    if wait is not None:
        raise LoginRefused(wait)
    if getattr(request, "owner_deactivated", False):
        raise OwnerDeactivated()
    if user is None or not user.is_active:
        raise InvalidCredentials("Unknown username or wrong password.")
    return token_issue(user, remember_me=remember_me)


@transaction.atomic
def owner_ensure(*, username: str, password: str, is_staff: bool = False, activate: bool = False):
    """Create the API owner, or set its password when it exists (idempotent). Returns (owner, created).
    An existing owner stays as active or inactive as it is unless `activate`: someone deactivated it on purpose,
    and reactivating it makes its unexpired tokens work again (setting the same password keeps them), so
    re-running the command (each `make run` ensures the demo owner) must not undo that unasked.
    `ValueError` for a user name or password the authentication endpoint would not take."""
    if not 0 < len(username) <= USERNAME_MAX:
        raise ValueError(f"The user name must have 1 to {USERNAME_MAX} characters.")
    if username != username.strip():
        # The login trims the name it is sent: this owner could never log in.
        raise ValueError("The user name may not begin or end with whitespace.")
    if not PASSWORD_MIN <= len(password) <= PASSWORD_MAX:
        raise ValueError(f"The password must have {PASSWORD_MIN} to {PASSWORD_MAX} characters.")
    owner, created = get_user_model().objects.get_or_create(username=username)
    if created or not check_password(password, owner.password):
        # Set only when it changes: setting it again (each `make run` ensures the demo owner) re-salted the hash
        # and revoked every token of the owner.
        owner.set_password(password)
    if activate:
        owner.is_active = True
    if is_staff:
        owner.is_staff = owner.is_superuser = True
    owner.save()
    return owner, created


def _external_id_conflict(external_id: str | None) -> ConflictError:
    return ConflictError(
        f"A core user with externalId '{external_id}' already exists.",
        error_key="externalIdTaken",
        field_errors=[{"field": "externalId", "message": EXTERNAL_ID_IN_USE}],
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


DELETION_ATTEMPTS = 3
CORE_USER_DELETION_LOCK_CLASS = 0x0DE1  # the key space of core user deletion locks (two-int advisory locks)


@transaction.atomic
def core_user_delete(*, core_user: CoreUser) -> bool:
    """Delete a core user and, by cascade, everything of theirs (`signals.core_user_deleting` first). False: a
    concurrent deletion deleted it first.

    A write under way under the user keeps it (`core_user_keep`): the user's row is deleted last, once that write
    committed, but the rows it added were not among those the cascade had collected; the deletion is made again
    (`_deleted_whole`). A write that comes after the user's row is deleted waits, then finds it gone. The user is
    not locked first: writes that lock one of the user's rows before the user would deadlock with it. Deletions of
    one user take turns (an advisory lock, taken exclusive): two at once deleted the same rows in different orders,
    a deadlock each time PostgreSQL broke it for the last of its attempts (503). That lock is also the gate the
    user's writes pass (`_deletion_gate`, shared): the deletion waits for the writes under way, and writes that come
    meanwhile wait for it (then find the user gone: 404)."""
    pk = core_user.pk

    def delete_once() -> bool:
        transaction_lock(CORE_USER_DELETION_LOCK_CLASS, uuid_lock_key(pk))
        current = CoreUser.objects.filter(pk=pk).first()
        if current is None:  # deleted meanwhile
            return False
        core_user_deleting.send(sender=CoreUser, core_user=current)
        current.delete()
        return True

    return _deleted_whole(delete_once, "The user's data kept changing while it was being deleted; try again.")


def owner_delete(*, owner) -> None:
    """Delete an API owner and everything of theirs: each core user as `core_user_delete` deletes one, then the
    owner (its webhooks, deliveries, configuration and provider applications by cascade). A change announced
    meanwhile (its deliveries kept the webhooks) is collected as `_deleted_whole` says."""
    model, pk = type(owner), owner.pk

    def delete_once() -> None:
        current = model.objects.filter(pk=pk).first()
        if current is not None:
            for core_user in CoreUser.objects.filter(owner=current).order_by("pk"):
                core_user_delete(core_user=core_user)
            current.delete()

    _deleted_whole(delete_once, "The API owner's data kept changing while it was being deleted; try again.")


def _deleted_whole(delete_once, conflict: str):
    """Run the cascade `delete_once` so that rows a concurrent write added meanwhile go too (what its last attempt,
    the one committed, returned). The cascade collects
    the rows first and deletes them after; a write's rows that commit between the two were not collected, and
    Django checks foreign keys only at commit, where the deletion failed (500). They are checked before the end
    and the deletion is made again from a savepoint, collecting them (at most `DELETION_ATTEMPTS` times, then
    409). SQLite serialises writers: nothing to collect there.

    The cascade deletes the user's rows before the user, while a write keeps the user before it locks a row of
    theirs: a write waiting for a row the deletion took, while the deletion waits for the user the write keeps, is
    a deadlock. The one PostgreSQL makes give way is the one that waited first: the deletion is then made again
    from its savepoint (which lets the write have the row and finish), the write is a 503 to send again
    (`errors.database_busy_wait`)."""
    for attempt in range(1, DELETION_ATTEMPTS + 1):
        try:
            with transaction.atomic():
                deleted = delete_once()
                if connection.vendor == "postgresql":
                    connection.check_constraints()
            return deleted
        except IntegrityError:
            if attempt == DELETION_ATTEMPTS:
                raise ConflictError(conflict) from None
        except OperationalError as exc:
            if sqlstate(exc) != DEADLOCK or attempt == DELETION_ATTEMPTS:
                raise


def core_user_find_or_create(*, owner, external_id: str, name: str, email: str) -> tuple[CoreUser, bool]:
    """The core user of `owner` with `external_id`, created (with `name`, `email`) when there is none.
    The same externalId always gives the same user, also when two requests race: the loser of the
    insert finds the winner's row. An existing user is returned unchanged."""
    existing = CoreUser.objects.filter(owner=owner, external_id=external_id).first()
    if existing is not None:
        return existing, False
    try:
        with transaction.atomic():
            return CoreUser.objects.create(owner=owner, external_id=external_id, name=name, email=email), True
    except IntegrityError:
        return CoreUser.objects.get(owner=owner, external_id=external_id), False


# --- Provider applications and credentials -------------------------------------------------------------


class ProviderAppExists(ConflictError):
    error_key = "providerAppExists"


def provider_application_create(*, owner, provider: str, **values) -> ProviderApplication:
    """Register the owner's OAuth application at `provider`; one per provider (409 otherwise)."""
    try:
        with transaction.atomic():
            return ProviderApplication.objects.create(owner=owner, provider=provider, **values)
    except IntegrityError:
        raise ProviderAppExists(
            f"An application for {provider} is already set up; change or delete it.",
            field_errors=[{"field": "provider", "message": "Already set up for this API owner."}],
        ) from None


# (`url`: the token URL as the body or the admin's form names it)
TOKEN_SERVER_MOVED_SECRET = (
    "Required when {url} names another server: the stored secret goes only where it was given for."
)


SECRET_UNREADABLE = (
    "Required: the stored secret cannot be read (it was encrypted with a key this server no longer has); send it again."
)


def provider_secret_needed(application: ProviderApplication, token_url: str, *, url_name: str) -> str | None:
    """Why `application` changed to `token_url` needs its client secret given again, or None: the URL names another
    server (`oauth.token_server`) than the one the stored secret was given for, or the stored secret cannot be read
    (the API's PUT, the admin's form; `url_name`: what the message calls the token URL)."""
    if secret_unreadable(application.client_secret):
        return SECRET_UNREADABLE
    if oauth.token_server(token_url) != oauth.token_server(application.token_url):
        return TOKEN_SERVER_MOVED_SECRET.format(url=url_name)
    return None


@transaction.atomic
def provider_application_update(*, application: ProviderApplication, **values) -> ProviderApplication:
    """Change the application; a `client_secret` of None keeps the stored one (it is never shown), unless the token
    URL moves to another server (`oauth.token_server`): kept, the secret would be sent there at the next connection
    (400 then, the secret must be given again). Credentials connected at the old server are refused a refresh at
    the new one (`magiclinks.services.credential_refresh`)."""
    if values.get("client_secret") is None:
        values.pop("client_secret", None)
        token_url = values.get("token_url", application.token_url)
        if reason := provider_secret_needed(application, token_url, url_name="tokenUrl"):
            raise DomainError(
                "The client secret is needed again.", field_errors=[{"field": "clientSecret", "message": reason}]
            )
    for name, value in values.items():
        setattr(application, name, value)
    application.save()
    return application


@transaction.atomic
def provider_application_delete(*, application: ProviderApplication) -> bool:
    """Delete the application. Stored credentials stay; new connections need an application again. False: a
    concurrent deletion deleted it first."""
    deleted, _ = application.delete()
    return deleted > 0


def provider_application_find(*, owner_id, provider: str) -> ProviderApplication | None:
    return ProviderApplication.objects.filter(owner_id=owner_id, provider=provider).first()


def providers_set_up(*, owner_id, providers) -> set[str]:
    """Those of `providers` the API owner has an application for (one query)."""
    return set(
        ProviderApplication.objects.filter(owner_id=owner_id, provider__in=list(providers)).values_list(
            "provider", flat=True
        )
    )


@transaction.atomic
def provider_credential_store(
    *,
    core_user: CoreUser,
    provider: str,
    access_token: str,
    refresh_token: str = "",
    token_type: str = "",
    scope: str = "",
    expires_at=None,
    token_server: str = "",
    refreshed: ProviderCredential | None = None,
) -> ProviderCredential | None:
    """Record fresh tokens of `core_user` at `provider` (AUTHENTICATED). A connection (a code grant) replaces
    everything, the refresh token too: an earlier grant's, kept, was refused at the next refresh and made the fresh
    connection UNAUTHENTICATED. A refresh (`refreshed`: the credential as read before it) keeps the previous refresh
    token when the answer has none (RFC 6749 section 6), and only while the credential is still as read: one
    disconnected (a refresh stored late re-created it), connected again or refreshed by another task meanwhile
    makes the answer outdated; None then. A connection keeps the core user (`core_user_keep`): one deleted while
    the user was at the provider is a 404 `notFound`, not a credential of nobody failing at commit. `token_server`:
    the server that issued the tokens (`oauth.token_server`)."""
    values = {
        "access_token": access_token,
        "refresh_token": refresh_token,
        "token_type": token_type,
        "scope": scope,
        "expires_at": expires_at,
        "status": ProviderCredential.Status.AUTHENTICATED,
        "status_message": "",
        "authenticated_at": timezone.now(),
        "refresh_claimed_until": None,
        "token_server": token_server,
    }
    if refreshed is not None:
        with transaction.atomic():
            current = _credential_as_read(refreshed)
            if current is None:
                return None
            if not refresh_token:
                del values["refresh_token"]
            for name, value in values.items():
                setattr(current, name, value)
            current.save()
            return current
    core_user_keep(core_user.pk)
    for _ in range(2):  # a concurrent first connection may insert between our look-up and our insert
        try:
            with transaction.atomic():
                credential, _created = ProviderCredential.objects.update_or_create(
                    core_user=core_user, provider=provider, defaults=values
                )
                return credential
        except IntegrityError:
            continue
    raise ConflictError("The credentials changed concurrently; try again.")


def provider_credential_refresh_claim(read: ProviderCredential, *, seconds: float) -> bool:
    """Claim the refresh of the credential `read` for `seconds`: True when it is still as read and no other refresh
    holds it. One refresh of a refresh token at a time: a provider that rotates refresh tokens refuses the second
    use of one (some revoke the whole grant then), and the refusal, when it came back first, marked the credential
    UNAUTHENTICATED and dropped the good answer. Every write of the credential (tokens stored, refused,
    connected again) ends the claim; a refresh that died leaves it to expire."""
    now = timezone.now()
    claimed = (
        ProviderCredential.objects.filter(pk=read.pk, updated_at=read.updated_at)
        .filter(Q(refresh_claimed_until__isnull=True) | Q(refresh_claimed_until__lte=now))
        .update(refresh_claimed_until=now + timedelta(seconds=seconds))
    )
    return claimed == 1


def _credential_as_read(read: ProviderCredential) -> ProviderCredential | None:
    """Inside a transaction: the credential `read`, locked, if it has not changed since it was read (none else)."""
    current = ProviderCredential.objects.select_for_update().filter(pk=read.pk).first()
    return current if current is not None and current.updated_at == read.updated_at else None


@transaction.atomic
def provider_credential_mark_unauthenticated(
    *, core_user: CoreUser, provider: str, message: str, read: ProviderCredential | None = None
) -> ProviderCredential | None:
    """The provider refused our tokens: keep the row (so the client sees why) as UNAUTHENTICATED. With `read` (the
    credential whose tokens were refused, as read before), only if it is still as read: a refusal of tokens another
    task already replaced, or of a connection since made again, says nothing of the credential now. None when
    nothing was marked."""
    if read is not None:
        credential = _credential_as_read(read)
    else:
        credential = (
            ProviderCredential.objects.select_for_update().filter(core_user=core_user, provider=provider).first()
        )
    if credential is None:
        return None
    credential.status = ProviderCredential.Status.UNAUTHENTICATED
    credential.status_message = message[:2000]
    credential.refresh_claimed_until = None
    credential.save(update_fields=["status", "status_message", "refresh_claimed_until", "updated_at"])
    return credential


@transaction.atomic
def provider_credential_delete(*, core_user: CoreUser, provider: str) -> bool:
    """Disconnect: forget the tokens of `core_user` at `provider`. True when there were some."""
    deleted, _ = ProviderCredential.objects.filter(core_user=core_user, provider=provider).delete()
    return deleted > 0
