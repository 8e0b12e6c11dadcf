"""Magic links: creation (optionally with the core user), revocation, resolving and opening a link's page, and
uploads through a file-upload link into the batch pipeline."""

import hashlib
import secrets
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_find_or_create, core_user_keep, providers_set_up
from platform_site.api.errors import NOT_FOUND, DomainError, NotFoundError

from ..models import LinkTombstone, LinkUpload, MagicLink

EXPIRES_IN_DEFAULT = 900
EXPIRES_IN_MIN = 900
EXPIRES_IN_MAX = 31_536_000
DEFAULT_SETTINGS = {"backgroundColor": "#F5F5F5", "showLeafUserName": False}
# A link deleted with its core user answers 410 for this long past its expiry, then 404 as one never made.
TOMBSTONE_KEPT = timedelta(days=90)
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


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def link_url(token: str) -> str:
    return f"{settings.PUBLIC_BASE_URL.rstrip('/')}/links/{token}"


# --- API ---------------------------------------------------------------------------------------------


def _require_provider_apps(owner_id, providers: list[str], widget: str) -> None:
    """400 `providerAppNotConfigured` naming the body's key: an authentication link's `provider`, a provider
    link's `allowedProviders`."""
    set_up = providers_set_up(owner_id=owner_id, providers=providers)
    missing = [p for p in providers if p not in set_up]
    if missing:
        key = "provider" if widget == MagicLink.Widget.AUTHENTICATION else "allowedProviders"
        raise ProviderAppNotConfigured(
            f"Set up the provider application first for: {', '.join(missing)}.",
            field_errors=[{"field": key, "message": f"No application set up for {p}."} for p in missing],
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
        _require_provider_apps(core_user.owner_id, providers, widget)
    core_user_keep(core_user.pk)
    token = secrets.token_urlsafe(32)  # 256 bits
    now = timezone.now()  # (one instant: `expiresAt` is exactly `expiresIn` after `createdAt`)
    link = MagicLink.objects.create(
        created_at=now,
        core_user=core_user,
        widget=widget,
        token_hash=token_hash(token),
        allowed_providers=providers if widget == MagicLink.Widget.PROVIDER else [],
        provider=provider if widget == MagicLink.Widget.AUTHENTICATION else None,
        settings=_normalised_settings(widget, settings),
        expires_at=now + timedelta(seconds=expires_in),
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
        _require_provider_apps(owner.pk, [link_values["provider"]], widget)
    elif widget == MagicLink.Widget.PROVIDER:
        _require_provider_apps(owner.pk, link_values["allowed_providers"], widget)
    for _attempt in range(3):
        core_user, _created = core_user_find_or_create(
            owner=owner, external_id=external_id, name=name or external_id, email=email or external_id
        )
        # The user found may be being deleted: then, once it is gone, the externalId makes a new one.
        if core_user_keep(core_user.pk, missing_ok=True):
            return magic_link_create(core_user=core_user, **link_values)
    raise NotFoundError(NOT_FOUND)  # (deleted each time it was made: someone is deleting it on purpose)


@transaction.atomic
def magic_link_delete(*, link: MagicLink) -> bool:
    """Revoke the link at once; its page answers 410 from now on. False: a concurrent deletion revoked it first."""
    return MagicLink.objects.filter(pk=link.pk, deleted_at__isnull=True).update(deleted_at=timezone.now()) > 0


# --- Pages -------------------------------------------------------------------------------------------


def magic_link_resolve(token: str, *, allow_expired: bool = False) -> MagicLink:
    """The live link with this token, or `LinkUnavailable` (404 unknown, 410 revoked or expired, 403 its API owner
    deactivated)."""
    if not token or len(token) > 200:
        raise LinkUnavailable(404, "unknown")
    digest = token_hash(token)
    link = MagicLink.objects.select_related("core_user__owner").filter(token_hash=digest).first()
    _link_check(link, digest=digest, allow_expired=allow_expired)
    return link


def core_user_links_bury(*, core_user: CoreUser) -> None:
    """The core user is being deleted, its links with it: keep their tokens' hashes (`LinkTombstone`), so that
    whoever still holds one is told it is no longer valid (410), as for a deleted link, not that it never existed."""
    now = timezone.now()
    LinkTombstone.objects.bulk_create(
        [
            LinkTombstone(token_hash=digest, kept_until=max(expires_at, now) + TOMBSTONE_KEPT)
            for digest, expires_at in MagicLink.objects.filter(core_user=core_user).values_list(
                "token_hash", "expires_at"
            )
        ],
        ignore_conflicts=True,  # (a deletion made again: `core_user_delete`)
    )


def link_tombstones_sweep() -> int:
    """Periodic: forget the deleted links kept past their time, as tombstones (deleted with their core user) or as
    links deleted through the API (their 410 is answered as long as a tombstone's: TOMBSTONE_KEPT past the later of
    their expiry and their deletion; they were kept for ever); returns how many."""
    now = timezone.now()
    deleted, _ = LinkTombstone.objects.filter(kept_until__lte=now).delete()
    cutoff = now - TOMBSTONE_KEPT
    _, by_model = MagicLink.objects.filter(deleted_at__lte=cutoff, expires_at__lte=cutoff).delete()
    return deleted + by_model.get(MagicLink._meta.label, 0)  # (the links, not the rows of theirs deleted with them)


def _link_check(link: MagicLink | None, *, digest: str, allow_expired: bool = False) -> None:
    """`LinkUnavailable` unless `link` (read with its core user and owner, by its token's hash `digest`) may be used
    now. None: 410 when it was deleted with its core user (`LinkTombstone`), else 404."""
    if link is None:
        if LinkTombstone.objects.filter(token_hash=digest).exists():
            raise LinkUnavailable(410, "revoked")
        raise LinkUnavailable(404, "unknown")
    if link.deleted_at is not None:
        raise LinkUnavailable(410, "revoked")
    if link.expired and not allow_expired:
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


# --- Uploads -----------------------------------------------------------------------------------------


@transaction.atomic
def link_upload(*, link: MagicLink, provider: str, upload):
    """Receive a zip through a file-upload link into the same batch pipeline as `POST /batch`. The link was
    checked before the body streamed in; revoked or expired meanwhile, or its user deleted meanwhile, it is
    `LinkUnavailable` (410) now. The link is locked until commit, so a revocation waits for the upload."""
    from conversion.services import batch_receive

    # The user kept before the link is locked, as every write of the user passes its deletion's gate first: a
    # deletion under way then ends first (and the link is found gone: 410), where it waited for the link this
    # upload held while the upload waited at its gate, a deadlock (503).
    core_user_keep(link.core_user_id, missing_ok=True)
    live = MagicLink.objects.select_for_update(of=("self",)).select_related("core_user__owner").filter(pk=link.pk)
    _link_check(live.first(), digest=link.token_hash)
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
