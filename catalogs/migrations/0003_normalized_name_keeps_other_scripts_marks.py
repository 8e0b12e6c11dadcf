"""Catalog names normalised again by the rule that keeps other scripts' marks (`catalogs.normalize`): the old rule
dropped every combining mark after NFKD and split a word at each mark that is no `\\w`, so "ガス" and "カス" were one
product (`カス`), "किट" and "कीट" another (`क ट`). Every product's and variety's `normalized_name` is computed again
from its `name`. Records that now share a key become one (the casefold of a kept mark can meet another spelling):
the one seen first keeps its name, the other's files join it. A name that was cut to 255 characters with a digest
of the whole (`platform_site.text.fit`) keeps its key: the whole, which the key digests, is gone."""

import hashlib
import re
import unicodedata

from django.db import migrations

MAX_NAME = 255
CUT_NAME = re.compile(r".*~[0-9a-f]{16}", re.DOTALL)


# The rule as this migration ran it (catalogs/normalize.py and platform_site.text.fit then); a later rule brings
# its own migration.
def _without_folded_marks(text: str) -> str:
    kept, base = [], ""
    for char in text:
        if not unicodedata.category(char).startswith("M"):
            base = char
        elif not base.isalpha() or unicodedata.name(base, "").startswith(("LATIN ", "GREEK ")):
            continue
        kept.append(char)
    return "".join(kept)


def _in_word(char: str) -> bool:
    return char.isalnum() or unicodedata.category(char).startswith("M")


def normalize_name(name: str) -> str:
    text = unicodedata.normalize("NFC", _without_folded_marks(unicodedata.normalize("NFKD", name)).casefold())
    return " ".join("".join(c if _in_word(c) else " " for c in text).split())


def fit(text: str, length: int) -> str:
    if len(text) <= length:
        return text
    return f"{text[: length - 17]}~{hashlib.sha256(text.encode()).hexdigest()[:16]}"


def _merge(Model, Link, *, record, into, same: tuple[str, ...]) -> None:
    """`record`'s files (those `into` lacks) join `into`, which keeps the first spelling seen; `record` goes."""
    to = Model._meta.model_name  # the link's key: `product`, `variety`
    for link in Link.objects.filter(**{to: record}):
        if not Link.objects.filter(**{to: into}, **{f: getattr(link, f) for f in same}).exists():
            Link.objects.filter(pk=link.pk).update(**{to: into})
    first = min(record, into, key=lambda r: r.created_time)
    Model.objects.filter(pk=into.pk).update(
        name=first.name, created_time=first.created_time, updated_time=max(record.updated_time, into.updated_time)
    )
    record.delete()


def _normalize_again(Model, Link, *, same: tuple[str, ...]) -> None:
    changed = []
    for record in Model.objects.only("pk", "name", "normalized_name", "created_time").iterator(chunk_size=2000):
        if len(record.name) == MAX_NAME and CUT_NAME.fullmatch(record.name):
            continue
        key = fit(normalize_name(record.name), MAX_NAME)
        if key and key != record.normalized_name:
            changed.append((record.created_time, str(record.pk), key))
    changed.sort()  # the first seen first: it keeps its name when two become one
    # Out of the way first (a uuid: no normalised name holds a '-'), as a new key may be another record's old one.
    for _, pk, _ in changed:
        Model.objects.filter(pk=pk).update(normalized_name=pk)
    for _, pk, key in changed:
        record = Model.objects.get(pk=pk)
        into = Model.objects.filter(core_user_id=record.core_user_id, normalized_name=key).first()
        if into is None:
            Model.objects.filter(pk=pk).update(normalized_name=key)
        else:
            _merge(Model, Link, record=record, into=into, same=same)


def normalize_again(apps, schema_editor):
    catalogs = apps.get_app_config("catalogs")
    _normalize_again(catalogs.get_model("Product"), catalogs.get_model("ProductFile"), same=("core_file_id",))
    _normalize_again(catalogs.get_model("Variety"), catalogs.get_model("VarietyFile"), same=("core_file_id", "crop"))


class Migration(migrations.Migration):
    dependencies = [
        ("catalogs", "0002_variety_crop_no_trailing_space"),
    ]

    operations = [migrations.RunPython(normalize_again, migrations.RunPython.noop)]
