from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "platform_site.api"
    label = "api"

    def ready(self):
        from . import schema  # noqa: F401  (registers the OpenAPI extensions)
