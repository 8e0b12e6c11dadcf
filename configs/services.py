"""Configuration with inheritance. Every app reads the effective configuration of a core user
through `config_resolve`; defaults are the supplement's "Configuration defaults"."""

from copy import deepcopy
from typing import Any

from django.db import transaction

from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_keep

from .defaults import DEFAULTS
from .models import Configuration

ENTRY_NAMES = tuple(DEFAULTS)


def config_owner_entries(owner) -> dict[str, Any]:
    """The API owner's effective entries: defaults overlaid with what the owner changed."""
    stored = Configuration.objects.filter(owner=owner, core_user__isnull=True).values_list("entries", flat=True)
    return {**deepcopy(DEFAULTS), **(stored.first() or {})}


def config_resolve(*, core_user: CoreUser) -> dict[str, Any]:
    """The effective configuration of a core user: its own entries over the owner's."""
    own = Configuration.objects.filter(core_user=core_user).values_list("entries", flat=True).first() or {}
    return {**config_owner_entries(core_user.owner), **own}


@transaction.atomic
def config_owner_update(*, owner, entries: dict[str, Any]) -> dict[str, Any]:
    """Change some of the owner's entries; returns the owner's effective entries."""
    config, _ = Configuration.objects.select_for_update().get_or_create(owner=owner, core_user=None)
    config.entries = {**config.entries, **entries}
    config.save(update_fields=["entries", "updated_at"])
    return config_owner_entries(owner)


@transaction.atomic
def config_user_set(*, core_user: CoreUser, entries: dict[str, Any], replace: bool) -> tuple[dict[str, Any], bool]:
    """Create or change a core user's own entries. `replace` makes `entries` the whole own set
    (POST); otherwise they are merged into it (PATCH). Returns the effective configuration, and whether the user
    had no own entries before (decided here, so of two requests at once only one created them)."""
    core_user_keep(core_user.pk)
    config, created = Configuration.objects.select_for_update().get_or_create(
        core_user=core_user, defaults={"owner": core_user.owner, "entries": {}}
    )
    config.entries = dict(entries) if replace else {**config.entries, **entries}
    config.save(update_fields=["entries", "updated_at"])
    return config_resolve(core_user=core_user), created


@transaction.atomic
def config_user_delete(*, core_user: CoreUser) -> None:
    """Return the core user to full inheritance from the owner."""
    Configuration.objects.filter(core_user=core_user).delete()
