"""Links are shown and revoked here, through `services.magic_link_delete`; the API creates them (the token is
shown once)."""

from django.contrib import admin

from platform_site.accounts.admin import ServiceOwnedAdmin

from . import services
from .models import LinkAuthorization, LinkUpload, MagicLink


@admin.register(MagicLink)
class MagicLinkAdmin(ServiceOwnedAdmin):
    list_display = ("id", "widget", "core_user", "expires_at", "usage_count", "last_accessed_at", "deleted_at")
    list_filter = ("widget",)
    search_fields = ("id", "core_user__id", "core_user__external_id")
    fields = (
        "id",
        "core_user",
        "widget",
        "allowed_providers",
        "provider",
        "settings",
        "expires_at",
        "created_at",
        "last_accessed_at",
        "usage_count",
        "deleted_at",
    )  # fmt: skip (never the token's hash)
    actions = ["revoke"]

    @admin.action(description="Revoke the selected links")
    def revoke(self, request, queryset):
        for link in queryset.filter(deleted_at__isnull=True):
            services.magic_link_delete(link=link)


@admin.register(LinkUpload)
class LinkUploadAdmin(ServiceOwnedAdmin):
    list_display = ("batch_id", "link", "created_at")


@admin.register(LinkAuthorization)
class LinkAuthorizationAdmin(ServiceOwnedAdmin):
    list_display = ("link", "provider", "created_at", "expires_at", "used_at")
    fields = ("link", "provider", "created_at", "expires_at", "used_at")
