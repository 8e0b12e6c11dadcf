"""Configurations are shown here; they are set through the API (`/configs`, `/configs/{coreUserId}`), whose
service checks their entries and their owner."""

from django.contrib import admin

from platform_site.accounts.admin import ServiceOwnedAdmin

from .models import Configuration


@admin.register(Configuration)
class ConfigurationAdmin(ServiceOwnedAdmin):
    list_display = ("id", "owner", "core_user", "updated_at")
    list_select_related = ("owner", "core_user")  # (Django's own follows no nullable key: a core user query per row)
    list_filter = ("owner",)
