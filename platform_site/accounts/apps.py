from django.apps import AppConfig
from django.contrib.admin import apps as admin_apps


class AccountsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "platform_site.accounts"
    label = "accounts"


class PlatformAdminConfig(admin_apps.AdminConfig):
    """Django's admin, on our site (`admin_site.OwnerAdminSite`). Not this module's default: that is the accounts
    app's."""

    default = False
    default_site = "platform_site.accounts.admin_site.OwnerAdminSite"
