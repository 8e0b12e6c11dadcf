from django.contrib import admin

from .models import Configuration


@admin.register(Configuration)
class ConfigurationAdmin(admin.ModelAdmin):
    list_display = ("id", "owner", "core_user", "updated_at")
    list_filter = ("owner",)
