"""Model fields every app may use."""

from django.db import models


class UpdatedTimeField(models.DateTimeField):
    """`auto_now`, except that a new row's value is its creation time (the model field `created`), to the
    microsecond: a resource never changed answers `updatedTime` equal to `createdTime`. Two `auto_now` clock reads
    differed by a few microseconds, now and then across a millisecond, which the API shows. `created` must be
    declared before this field (Django fills a new row's fields in declaration order)."""

    def __init__(self, *args, created: str = "created_at", **kwargs):
        self.created = created
        kwargs["auto_now"] = True
        super().__init__(*args, **kwargs)

    def deconstruct(self):
        # To migrations it is the `auto_now` DateTimeField it was: the column is the same, only the value of a new
        # row differs (no migration, no table rebuilt on SQLite).
        name, _, args, kwargs = super().deconstruct()
        return name, "django.db.models.DateTimeField", args, kwargs

    def pre_save(self, model_instance, add):
        created = getattr(model_instance, self.created) if add else None
        if created is None:
            return super().pre_save(model_instance, add)
        setattr(model_instance, self.attname, created)
        return created
