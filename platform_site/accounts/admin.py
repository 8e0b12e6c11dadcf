"""Admin of owners' core users, provider applications and credentials; and the rules every app's admin follows.

Nothing but a service writes (ARCHITECTURE "Request path"): a change made here would skip the service's validation,
the keys it derives (pooling, crop names) and the events it sends, so the rows the services own are shown, not
changed (`ServiceOwnedAdmin`, `ServiceOwnedInline`); an admin may offer a change or a deletion by calling the
service. What an owner sets up itself (core users, webhooks, provider applications) stays editable here, but what
ties it to its owner does not (`OwnerBoundAdmin`): moving it to another owner would cross tenants. Every form here
refuses text the API refuses (`AdminTextRulesMixin`). The site itself, and its login, are in `admin_site`."""

import json
from urllib.parse import urlencode

from django import forms
from django.apps import apps
from django.contrib import admin
from django.contrib.auth import get_permission_codename, get_user_model
from django.contrib.auth.admin import GroupAdmin, UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import Group
from django.db import router, transaction
from django.forms.models import BaseInlineFormSet
from django.urls import reverse
from django.utils.html import format_html

from platform_site.api.urlsafety import validate_public_url
from platform_site.validators import (
    validate_email_address,
    validate_http_url,
    validate_no_control_characters,
    validate_scopes,
)

from . import services
from .models import CoreUser, ProviderApplication, ProviderCredential

# Secrets are the typist's bytes, whatever they are (as through the API).
SECRET_FIELDS = frozenset({"password", "password1", "password2", "secret", "client_secret"})


class AdminTextRulesMixin:
    """A form of the admin refuses the text the API refuses: control characters but tab and line breaks, in any
    text input but a secret (the API's own validator). A name stored here with a BEL or an escape in it reached every
    client as the API answers it, though no client could have sent it. Every admin's forms are built on this
    (`AdminForm`, the owner admin's forms; tests/api/test_admin.py checks each registered admin)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():  # (the form's own copies: validators added here stay in this form)
            secret = name in SECRET_FIELDS or isinstance(field.widget, forms.PasswordInput)
            if isinstance(field, forms.CharField) and not secret:
                field.validators.append(validate_no_control_characters)


class AdminForm(AdminTextRulesMixin, forms.ModelForm):
    """The model form of every admin and inline of ours."""


class ServiceDeleteMixin:
    """Deletes a row through its service, `service_delete(obj)` (the bulk action too, one row at a time). What goes
    with the row is the service's to delete: for those rows the user needs Django's delete permission of their
    models, not their admins' leave (most are `ServiceOwnedAdmin`'s, which deletes nothing itself and would refuse
    every cascade)."""

    def service_delete(self, obj) -> None:
        raise NotImplementedError

    def delete_model(self, request, obj):
        self.service_delete(obj)

    def delete_queryset(self, request, queryset):
        # All or none, as Django's own bulk delete (one `queryset.delete()`): a failure rolls back the rows before it.
        # In id order, the order other writes lock several of these rows in (`event_emit` for webhooks).
        with transaction.atomic(using=router.db_for_write(queryset.model)):
            for obj in queryset.order_by("pk"):
                self.service_delete(obj)

    def get_deleted_objects(self, objs, request):
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        # The models that go are those `counts` names (by plural name): asked of those Django has an admin for, as
        # it asks, without collecting the rows a second time.
        perms_needed = {
            model._meta.verbose_name
            for model in apps.get_models()
            if model._meta.verbose_name_plural in counts
            and self.admin_site.is_registered(model)
            and not request.user.has_perm(f"{model._meta.app_label}.{get_permission_codename('delete', model._meta)}")
        }
        return deleted, counts, perms_needed, protected


class ServiceOwnedAdmin(ServiceDeleteMixin, admin.ModelAdmin):
    """Rows the services create and change: shown, never added or changed here. A subclass may delete a row
    through its service (`service_delete`); `deletable(obj)` says which rows it may."""

    form = AdminForm

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def deletable(self, obj) -> bool:
        return False

    def has_delete_permission(self, request, obj=None):
        deletes = type(self).service_delete is not ServiceDeleteMixin.service_delete
        return deletes and (obj is None or self.deletable(obj)) and super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # one row at a time: `deletable` is asked of each
        return actions


class ServiceOwnedInline(admin.options.InlineModelAdmin):
    """The rows a service links to the one shown: listed, never added, changed or removed here."""

    form = AdminForm
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class LatestRowsFormSet(BaseInlineFormSet):
    """The inline's latest `shown` rows in its `latest_order`, their keys chosen first: ordering and cutting the
    whole rows sorted every one, geometry and all (the latest 10 of a field's 5,000 boundaries took 3 s)."""

    shown = 10
    latest_order: tuple[str, ...] = ("-pk",)

    def get_queryset(self):
        if not hasattr(self, "_queryset"):
            rows = super().get_queryset()
            keys = list(rows.order_by(*self.latest_order).values_list("pk", flat=True)[: self.shown])
            self._queryset = rows.filter(pk__in=keys).order_by(*self.latest_order)
        return self._queryset


class LatestRowsInline(ServiceOwnedInline):
    """A service's rows linked to the one shown, only the latest `shown` of them: a machine of 5,000 files, or a
    product in as many, took 13-17 s and 5-9 MB to show. The row's page links to them all (`latest_rows_display`)."""

    formset = LatestRowsFormSet
    shown = LatestRowsFormSet.shown
    latest_order: tuple[str, ...] = ("-created_time", "-pk")

    def __init__(self, parent_model, admin_site):
        super().__init__(parent_model, admin_site)
        self.verbose_name_plural = f"{self.verbose_name_plural} (the latest {self.shown})"

    def get_formset(self, request, obj=None, **kwargs):
        formset = super().get_formset(request, obj, **kwargs)  # (a class made for this request)
        formset.shown, formset.latest_order = self.shown, self.latest_order
        return formset


def latest_rows_display(inline: type[LatestRowsInline], noun: str):
    """A read-only field for the page of the row `inline` is shown on: a link to the list of all the rows of the
    inline's model that belong to it, saying how many (`all_files = latest_rows_display(MachineFileInline, "files")`,
    named in `readonly_fields`)."""
    model = inline.model
    changelist = f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist"

    @admin.display(description=noun)
    def link(admin_self, obj):
        if obj is None or obj.pk is None:
            return "-"
        key = inline.fk_name or next(f.name for f in model._meta.fields if f.related_model is type(obj))
        url = f"{reverse(changelist)}?{urlencode({key: obj.pk})}"
        count = model.objects.filter(**{key: obj}).count()
        shown = min(count, inline.shown)
        # (underlined: the admin tells a link from the text around it by its colour alone, WCAG 1.4.1)
        return format_html(
            '<a href="{}" style="text-decoration: underline">All {} of its {}</a> (the latest {} below)',
            url, count, noun, shown,
        )  # fmt: skip

    return link


class OwnerBoundAdmin(ServiceDeleteMixin, admin.ModelAdmin):
    """An owner's own set-up: editable, and deleted through its service, but `fixed_fields` (what ties the row to
    its owner) are fixed once it exists. They stay in the form, disabled (a posted value is ignored), so the
    uniqueness rules that involve the owner (a core user's external id, one application per provider) are still
    checked and answered as form errors. `fixed_fields` may name more: what the API never changes either."""

    form = AdminForm
    fixed_fields: tuple[str, ...] = ("owner",)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        if obj is not None:
            for name in self.fixed_fields:
                if name in form.base_fields:
                    form.base_fields[name].disabled = True
        return form


class CoreUserForm(AdminForm):
    """The email is an address, or empty, as through the API (its validator); the one a user has is kept whatever it
    is (a user made through a magic link without one has its externalId as email, the spec's rule)."""

    def clean_email(self):
        value = self.cleaned_data["email"]
        if value and value != self.instance.email:
            validate_email_address(value)
        return value


@admin.register(CoreUser)
class CoreUserAdmin(OwnerBoundAdmin):
    form = CoreUserForm
    list_display = ("id", "name", "email", "external_id", "owner", "created_at")
    list_filter = ("owner",)
    search_fields = ("id", "name", "email", "external_id")

    def service_delete(self, obj) -> None:
        services.core_user_delete(core_user=obj)


class ScopesFormField(forms.JSONField):
    """The scopes as JSON, a list of scope tokens (`validate_scopes`, the API's rules); left empty, none. Any JSON
    was stored: `null` was a 500, `[1, 2]` made the connect page a 500, a string was listed as one."""

    def to_python(self, value):
        return [] if value in self.empty_values else super().to_python(value)

    def prepare_value(self, value):
        # Written back in ASCII (scope tokens are, RFC 6749 3.3): a refused "\ud800" is shown as typed; Django's
        # own writing put the lone surrogate itself in the page, which could not be encoded (a 500).
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, cls=self.encoder)

    def validate(self, value):
        super().validate(value)
        validate_scopes(value)


def validate_token_url(value: str) -> None:
    """http(s), then public: an ftp: URL is named for its scheme alone (each validator of a field speaks, and its
    host resolved nowhere was named too)."""
    validate_http_url(value)
    validate_public_url(value)


class ProviderApplicationForm(AdminForm):
    """The client secret can be typed but is never shown; left empty on a change, it is kept. The URLs are http(s)
    and the scopes tokens, as through the API (its validators); the token URL, which we call, may not point into a
    private network."""

    client_secret = forms.CharField(widget=forms.PasswordInput(render_value=False), required=False)
    authorize_url = forms.URLField(max_length=2000, assume_scheme="https", validators=[validate_http_url])
    token_url = forms.URLField(max_length=2000, assume_scheme="https", validators=[validate_token_url])
    scopes = ScopesFormField(required=False, initial=list)

    class Meta:
        model = ProviderApplication
        fields = ("owner", "provider", "client_id", "client_secret", "authorize_url", "token_url", "scopes")

    def clean_client_secret(self):
        value = self.cleaned_data.get("client_secret")
        if not value and not self.instance.pk:
            raise forms.ValidationError("The client secret is required.")
        return value

    def clean(self):
        """A secret left empty keeps the stored one, unless the token URL moves to another server, which would get it
        (`services.provider_application_update`'s rule)."""
        cleaned = super().clean()
        if self.instance.pk and not cleaned.get("client_secret"):
            token_url = cleaned.get("token_url")
            reason = token_url and services.provider_secret_needed(self.instance, token_url, url_name="the token URL")
            if reason:
                self.add_error("client_secret", reason)
            else:
                cleaned["client_secret"] = self.instance.client_secret
        return cleaned


@admin.register(ProviderApplication)
class ProviderApplicationAdmin(OwnerBoundAdmin):
    form = ProviderApplicationForm
    # The API fixes the provider too (a PUT names none): the owner's credentials and links name it.
    fixed_fields = ("owner", "provider")
    list_display = ("provider", "owner", "client_id", "authorize_url", "token_url", "updated_at")
    list_filter = ("provider", "owner")
    search_fields = ("client_id",)

    def service_delete(self, obj) -> None:
        services.provider_application_delete(application=obj)


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(ServiceOwnedAdmin):
    """Tokens are never displayed; an operator can see the state and delete (disconnect, through the service)."""

    list_display = ("core_user", "provider", "status", "expires_at", "authenticated_at", "updated_at")
    list_filter = ("provider", "status")
    search_fields = ("core_user__id", "core_user__external_id")
    fields = ("core_user", "provider", "status", "status_message", "token_type", "scope", "expires_at",
              "authenticated_at", "created_at", "updated_at")  # fmt: skip

    def deletable(self, obj) -> bool:
        return True

    def service_delete(self, obj) -> None:
        services.provider_credential_delete(core_user=obj.core_user, provider=obj.provider)


class OwnerChangeForm(AdminTextRulesMixin, UserChangeForm):
    pass


class OwnerCreationForm(AdminTextRulesMixin, AdminUserCreationForm):
    pass


class OwnerAdmin(ServiceDeleteMixin, UserAdmin):
    """Django's user admin, an API owner deleted with everything of theirs through `services.owner_delete`."""

    form = OwnerChangeForm
    add_form = OwnerCreationForm

    def service_delete(self, obj) -> None:
        services.owner_delete(owner=obj)


class OwnerGroupAdmin(GroupAdmin):
    """Django's group admin, its form refusing control characters as every admin's does."""

    form = AdminForm


admin.site.unregister(get_user_model())
admin.site.register(get_user_model(), OwnerAdmin)
admin.site.unregister(Group)
admin.site.register(Group, OwnerGroupAdmin)
