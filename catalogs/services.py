"""Catalog records that the conversion pipeline writes for every product and variety a file names.

One record per core user and normalised name: the unique constraint decides under concurrency,
and a lost race becomes a lookup of the winner's row (`get_or_create` in a savepoint)."""

import uuid

from django.db import IntegrityError, transaction
from django.db.models import Model
from django.utils import timezone

from platform_site.accounts.models import CoreUser
from platform_site.api.errors import DomainError
from platform_site.text import fit

from .models import Product, ProductFile, Variety, VarietyFile
from .normalize import crop_name, normalize_name

MAX_NAME = 255


class CatalogNameEmpty(DomainError):
    error_key = "catalogNameEmpty"


def _record(model: type[Model], *, core_user: CoreUser, name: str) -> tuple[Model, bool]:
    """The core user's record of `name` (by normalised name), created with this spelling if new; and whether it
    was. A new record's updatedTime is its createdTime (one clock read)."""
    # Cut with a digest of the whole (`fit`): two long tank mixes that differ only past the cut stay two products.
    text = " ".join((name or "").split())
    display = fit(text, MAX_NAME)
    normalized = fit(normalize_name(text), MAX_NAME)
    if not normalized:
        raise CatalogNameEmpty(f"{model.__name__} name {name!r} has no letters or digits.")
    for _ in range(2):
        now = timezone.now()
        try:
            with transaction.atomic():
                return model.objects.get_or_create(
                    core_user=core_user,
                    normalized_name=normalized,
                    defaults={"name": display, "created_time": now, "updated_time": now},
                )
        except IntegrityError:  # lost the race to a concurrent insert; the row exists now
            continue
    return model.objects.get(core_user=core_user, normalized_name=normalized), False


@transaction.atomic
def product_record(*, core_user: CoreUser, name: str, core_file_id: uuid.UUID | str | None = None) -> Product:
    """Record that a file of `core_user` names product `name`: the product (one per normalised
    name) and, with `core_file_id`, the link to the file. Idempotent."""
    product, created = _record(Product, core_user=core_user, name=name)
    if core_file_id is not None:
        _, linked = ProductFile.objects.get_or_create(product=product, core_file_id=uuid.UUID(str(core_file_id)))
        if linked and not created:  # (a new product's first file is part of its creation)
            Product.objects.filter(pk=product.pk).update(updated_time=timezone.now())
    return product


@transaction.atomic
def variety_record(
    *,
    core_user: CoreUser,
    name: str,
    crop: str | None = None,
    core_file_id: uuid.UUID | str | None = None,
) -> Variety:
    """Record that a file of `core_user` names variety `name` (of `crop`, stored lower-case): the
    variety (one per normalised name) and, with `core_file_id`, the link to the file. Idempotent."""
    variety, created = _record(Variety, core_user=core_user, name=name)
    if core_file_id is not None:
        _, linked = VarietyFile.objects.get_or_create(
            variety=variety, core_file_id=uuid.UUID(str(core_file_id)), crop=crop_name(crop)
        )
        if linked and not created:
            Variety.objects.filter(pk=variety.pk).update(updated_time=timezone.now())
    return variety
