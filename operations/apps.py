from django.apps import AppConfig


class OperationsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "operations"

    def ready(self):
        from conversion.signals import batch_ended, file_processed
        from fields.signals import field_files_relinked

        from .services import on_batch_ended, on_field_files_relinked, on_file_processed

        file_processed.connect(on_file_processed, dispatch_uid="operations.file_processed")
        batch_ended.connect(on_batch_ended, dispatch_uid="operations.batch_ended")
        field_files_relinked.connect(on_field_files_relinked, dispatch_uid="operations.field_files_relinked")
