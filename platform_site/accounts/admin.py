"""Admin of owners' core users, provider applications and credentials; and the rules every app's admin follows.

Nothing but a service writes (ARCHITECTURE "Request path"): a change made here would skip the service's validation,
the keys it derives (pooling, crop names) and the events it sends, so the rows the services own are shown, not
changed (`ServiceOwnedAdmin`, `ServiceOwnedInline`); an admin may offer a change or a deletion by calling the
service. What an owner sets up itself (core users, webhooks, provider applications) stays editable here, but what
ties it to its owner does not (`OwnerBoundAdmin`): moving it to another owner would cross tenants."""

from django import forms
from django.contrib import admin

from .models import CoreUser, ProviderApplication, ProviderCredential


class ServiceOwnedAdmin(admin.ModelAdmin):
    """Rows the services create and change: shown, never added or changed here. A subclass may delete a row
    through its service: `deletable(obj)` says which rows it may, `service_delete(obj)` deletes one (the
    service deletes what depends on it, so the admin asks no permission for those)."""

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def deletable(self, obj) -> bool:
        return False

    def service_delete(self, obj) -> None:
        raise NotImplementedError

    def has_delete_permission(self, request, obj=None):
        deletes = type(self).service_delete is not ServiceOwnedAdmin.service_delete
        return deletes and (obj is None or self.deletable(obj)) and super().has_delete_permission(request, obj)

    def get_actions(self, request):
        actions = super().get_actions(request)
        actions.pop("delete_selected", None)  # one row at a time, through the service
        return actions

    def get_deleted_objects(self, objs, request):
        deleted, counts, _, protected = super().get_deleted_objects(objs, request)
        return deleted, counts, set(), protected

    def delete_model(self, request, obj):
        self.service_delete(obj)


class ServiceOwnedInline(admin.options.InlineModelAdmin):
    """The rows a service links to the one shown: listed, never added, changed or removed here."""

    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class OwnerBoundAdmin(admin.ModelAdmin):
    """An owner's own settings: editable, but `owner_fields` (what ties the row to its owner) are fixed once it
    exists."""

    owner_fields: tuple[str, ...] = ("owner",)

    def get_readonly_fields(self, request, obj=None):
        readonly = tuple(super().get_readonly_fields(request, obj))
        return readonly if obj is None else (*readonly, *(name for name in self.owner_fields if name not in readonly))


@admin.register(CoreUser)
class CoreUserAdmin(OwnerBoundAdmin):
    list_display = ("id", "name", "email", "external_id", "owner", "created_at")
    list_filter = ("owner",)
    search_fields = ("id", "name", "email", "external_id")


class ProviderApplicationForm(forms.ModelForm):
    """The client secret can be typed but is never shown; left empty on a change, it is kept."""

    client_secret = forms.CharField(widget=forms.PasswordInput(render_value=False), required=False)
    authorize_url = forms.URLField(max_length=2000, assume_scheme="https")
    token_url = forms.URLField(max_length=2000, assume_scheme="https")

    class Meta:
        model = ProviderApplication
        fields = ("owner", "provider", "client_id", "client_secret", "authorize_url", "token_url", "scopes")

    def clean_client_secret(self):
        value = self.cleaned_data.get("client_secret")
        if not value:
            if self.instance.pk:
                return self.instance.client_secret
            raise forms.ValidationError("The client secret is required.")
        return value


@admin.register(ProviderApplication)
class ProviderApplicationAdmin(OwnerBoundAdmin):
    form = ProviderApplicationForm
    list_display = ("provider", "owner", "client_id", "authorize_url", "token_url", "updated_at")
    list_filter = ("provider", "owner")
    search_fields = ("client_id",)


@admin.register(ProviderCredential)
class ProviderCredentialAdmin(admin.ModelAdmin):
    """Tokens are never displayed; an operator can see the state and delete (disconnect)."""

    list_display = ("core_user", "provider", "status", "expires_at", "authenticated_at", "updated_at")
    list_filter = ("provider", "status")
    search_fields = ("core_user__id", "core_user__external_id")
    fields = ("core_user", "provider", "status", "status_message", "token_type", "scope", "expires_at",
              "authenticated_at", "created_at", "updated_at")  # fmt: skip
    readonly_fields = fields

    def has_add_permission(self, request):
        return False
