"""A batch's or a file's stored bytes go with its record, however the record is deleted (a core user's deletion
cascades to all of theirs): once the deletion commits, the upload, the data set zips, the work folder and the
file's outputs and images are removed from storage. Nothing is removed if the deletion rolls back."""

from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver

from . import storage
from .models import Batch, File


@receiver(post_delete, sender=Batch, dispatch_uid="conversion.batch_storage")
def _batch_deleted(sender, instance: Batch, **kwargs) -> None:
    upload, batch_id = instance.upload.name, instance.pk

    def remove() -> None:
        if upload:
            instance.upload.storage.delete(upload)
        storage.delete_tree(f"datasets/{batch_id}")
        storage.remove_work_dir(batch_id)

    transaction.on_commit(remove)


@receiver(post_delete, sender=File, dispatch_uid="conversion.file_storage")
def _file_deleted(sender, instance: File, **kwargs) -> None:
    prefix = storage.file_prefix(instance.pk)
    transaction.on_commit(lambda: storage.delete_tree(prefix))
