from django.contrib import admin

from .models import CoreUser


@admin.register(CoreUser)
class CoreUserAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "email", "external_id", "owner", "created_at")
    list_filter = ("owner",)
    search_fields = ("id", "name", "email", "external_id")
