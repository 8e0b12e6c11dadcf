from django.contrib import admin

from .models import Delivery, DeliveryAttempt, Webhook, WebhookEvent


class WebhookEventInline(admin.TabularInline):
    model = WebhookEvent
    extra = 0
    fields = ("event",)


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    list_display = ("id", "name", "url", "owner", "created_at")
    list_filter = ("owner",)
    search_fields = ("name", "url")
    inlines = [WebhookEventInline]

    def get_exclude(self, request, obj=None):
        # The secret can be set when adding a webhook but is never shown again.
        return ("secret",) if obj is not None else ()

    def save_formset(self, request, form, formset, change):
        for sub in formset.save(commit=False):
            sub.owner = form.instance.owner
            sub.save()
        formset.save_m2m()
        for obj in formset.deleted_objects:
            obj.delete()


class DeliveryAttemptInline(admin.TabularInline):
    model = DeliveryAttempt
    extra = 0
    can_delete = False
    readonly_fields = ("number", "attempted_at", "status_code", "duration_ms", "error", "response", "will_retry")
    fields = readonly_fields


@admin.register(Delivery)
class DeliveryAdmin(admin.ModelAdmin):
    list_display = ("id", "event", "webhook", "status", "attempts", "next_attempt_at", "created_at")
    list_filter = ("status", "event", "owner")
    readonly_fields = ("webhook", "owner", "event", "core_user_id", "body", "attempts", "created_at")
    inlines = [DeliveryAttemptInline]
