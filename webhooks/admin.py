"""An owner's webhooks are editable here (never moved to another owner); deliveries are the services' record."""

from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.forms.models import BaseInlineFormSet

from platform_site.accounts.admin import AdminForm, OwnerBoundAdmin, ServiceOwnedAdmin, ServiceOwnedInline
from platform_site.api.urlsafety import validate_public_url

from . import services
from .models import Delivery, DeliveryAttempt, Webhook, WebhookEvent


class WebhookEventFormSet(BaseInlineFormSet):
    """At least one event, as the API's `events` (a webhook of none was saved here, and listed by the API with
    `events: []`); an event once per owner (the model's constraint, which the form cannot check: the owner is set on
    save), as form errors."""

    def clean(self):
        super().clean()
        events = [
            form.cleaned_data["event"]
            for form in self.forms
            if form.cleaned_data.get("event") and not form.cleaned_data.get("DELETE")
        ]
        if not events and not any(self.errors):  # (a row in error says why itself)
            raise ValidationError("A webhook listens to at least one event.")
        twice = sorted({event for event in events if events.count(event) > 1})
        if twice:
            raise ValidationError(f"Listed twice: {', '.join(twice)}.")
        owner_id = self.instance.owner_id
        if owner_id is None:
            return  # (the webhook's own form has an error already)
        if names := sorted(services.events_taken(owner_id, events, other_than=self.instance.pk)):
            raise ValidationError(f"Another webhook of this owner listens to {', '.join(names)} already.")


class WebhookEventInline(admin.TabularInline):
    model = WebhookEvent
    form = AdminForm
    formset = WebhookEventFormSet
    fields = ("event",)

    def get_extra(self, request, obj=None, **kwargs):
        return 1 if obj is None else 0  # a new webhook's page offers the row of its first event


@admin.register(Webhook)
class WebhookAdmin(OwnerBoundAdmin):
    list_display = ("id", "name", "url", "owner", "created_at")
    list_filter = ("owner",)
    search_fields = ("name", "url")
    inlines = [WebhookEventInline]
    # A URL typed without a scheme is https; into a private network, refused as the registration refuses it.
    formfield_overrides = {models.URLField: {"assume_scheme": "https", "validators": [validate_public_url]}}

    def service_delete(self, obj) -> None:
        services.webhook_delete(webhook=obj)

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


class DeliveryAttemptInline(ServiceOwnedInline, admin.TabularInline):
    model = DeliveryAttempt
    readonly_fields = ("number", "attempted_at", "status_code", "duration_ms", "error", "response", "will_retry")
    fields = readonly_fields


@admin.register(Delivery)
class DeliveryAdmin(ServiceOwnedAdmin):
    list_display = ("id", "event", "webhook", "status", "attempts", "next_attempt_at", "created_at")
    list_filter = ("status", "event", "owner")
    inlines = [DeliveryAttemptInline]
