from django.contrib import admin
from django.utils import timezone

from .models import LinkAuthorization, LinkUpload, MagicLink


@admin.register(MagicLink)
class MagicLinkAdmin(admin.ModelAdmin):
    """Links can be inspected and revoked; they are created through the API (the token is shown once)."""

    list_display = ("id", "widget", "core_user", "expires_at", "usage_count", "last_accessed_at", "deleted_at")
    list_filter = ("widget",)
    search_fields = ("id", "core_user__id", "core_user__external_id")
    readonly_fields = ("id", "core_user", "widget", "allowed_providers", "provider", "settings", "expires_at",
                       "created_at", "last_accessed_at", "usage_count", "deleted_at")  # fmt: skip
    exclude = ("token_hash",)
    actions = ["revoke"]

    def has_add_permission(self, request):
        return False

    @admin.action(description="Revoke the selected links")
    def revoke(self, request, queryset):
        queryset.filter(deleted_at__isnull=True).update(deleted_at=timezone.now())


@admin.register(LinkUpload)
class LinkUploadAdmin(admin.ModelAdmin):
    list_display = ("batch_id", "link", "created_at")
    readonly_fields = ("link", "batch_id", "created_at")


@admin.register(LinkAuthorization)
class LinkAuthorizationAdmin(admin.ModelAdmin):
    list_display = ("link", "provider", "created_at", "expires_at", "used_at")
    fields = ("link", "provider", "created_at", "expires_at", "used_at")
    readonly_fields = fields
