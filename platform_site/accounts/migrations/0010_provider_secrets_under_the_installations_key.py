"""Provider secrets written again under this installation's own key. Until 2026-11-27 an installation without
SECRET_KEY ran on a fixed one written in the code, and derived the key of its provider secrets (client secrets,
tokens) from it; since, it makes its own SECRET_KEY on its first start, which could not read them: every answer about
a provider application was a 500. `platform_site.accounts.crypto` still reads the old key's secrets (never writes
with it): here each one it reads is written again under the key in use. A secret no key reads is left as it is."""

from django.db import migrations

# What was stored, read and written again: (model, encrypted fields)
SECRETS = {"ProviderApplication": ("client_secret",), "ProviderCredential": ("access_token", "refresh_token")}


def encrypt_again(apps, schema_editor):
    for name, fields in SECRETS.items():
        model = apps.get_model("accounts", name)
        for row in model.objects.only("pk", *fields).iterator(chunk_size=500):
            # Read in clear and written back: the field encrypts under the key in use (one no key reads is written
            # back as it was stored, `crypto.UnreadableSecret`).
            model.objects.filter(pk=row.pk).update(**{field: getattr(row, field) for field in fields})


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0009_provider_credential_token_server"),
    ]

    operations = [migrations.RunPython(encrypt_again, migrations.RunPython.noop)]
