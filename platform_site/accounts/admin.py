from django import forms
from django.contrib import admin

from .models import CoreUser, ProviderApplication, ProviderCredential


@admin.register(CoreUser)
class CoreUserAdmin(admin.ModelAdmin):
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
class ProviderApplicationAdmin(admin.ModelAdmin):
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
