from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "platform_site.api"
    label = "api"
