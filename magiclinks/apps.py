from django.apps import AppConfig


class MagiclinksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "magiclinks"

    def ready(self):
        from . import receivers  # noqa: F401  (a deleted core user's links leave tombstones)
