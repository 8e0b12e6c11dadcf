from django.apps import AppConfig


class MagiclinksConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "magiclinks"
