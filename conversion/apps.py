from django.apps import AppConfig


class ConversionConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "conversion"

    def ready(self):
        from . import cleanup  # noqa: F401  (stored bytes go with their records)
