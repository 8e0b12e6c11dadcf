from django.apps import AppConfig


class ConversionConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversion"

    def ready(self):
        from assets.signals import machine_deleted
        from fields.signals import field_files_relinked

        from . import cleanup  # noqa: F401  (stored bytes go with their records)
        from .links import on_field_files_relinked, on_machine_deleted

        field_files_relinked.connect(on_field_files_relinked, dispatch_uid="conversion.field_files_relinked")
        machine_deleted.connect(on_machine_deleted, dispatch_uid="conversion.machine_deleted")
