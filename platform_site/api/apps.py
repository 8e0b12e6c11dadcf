from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "platform_site.api"
    label = "api"

    def ready(self):
        from django.conf import settings

        from platform_site.configuration import importable

        from . import schema  # noqa: F401  (registers the OpenAPI extensions)

        # The classes settings name by dotted path, checked as every process starts (they failed in requests: a 500).
        importable("FILE_STORAGE_BACKEND", settings.STORAGES["default"]["BACKEND"])
        if settings.WEATHER_SOURCE:
            importable("WEATHER_SOURCE", settings.WEATHER_SOURCE)
