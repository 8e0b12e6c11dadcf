"""A provider credential records the token server that issued its tokens (`oauth.token_server`): a refresh goes
there or nowhere. A token URL moved to another server sent every connected user's refresh token (and the kept
client secret) to it. Existing credentials take their application's token server of now: they were issued by it
unless it moved before this migration (then their next refresh is refused there, as it was)."""

from urllib.parse import urlsplit

from django.db import migrations, models

DEFAULT_PORTS = {"http": 80, "https": 443}


def token_server(url: str) -> str:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or DEFAULT_PORTS.get(scheme)
    except ValueError:
        port = None
    return f"{scheme}://{(parts.hostname or '').lower()}:{port}"


def credentials_token_server(apps, schema_editor):
    ProviderApplication = apps.get_model("accounts", "ProviderApplication")
    ProviderCredential = apps.get_model("accounts", "ProviderCredential")
    for application in ProviderApplication.objects.only("owner_id", "provider", "token_url"):
        ProviderCredential.objects.filter(
            core_user__owner_id=application.owner_id, provider=application.provider
        ).update(token_server=token_server(application.token_url))


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0008_provider_application_scopes_tokens"),
    ]

    operations = [
        migrations.AddField(
            model_name="providercredential",
            name="token_server",
            field=models.CharField(blank=True, default="", max_length=300),
        ),
        migrations.RunPython(credentials_token_server, migrations.RunPython.noop),
    ]
