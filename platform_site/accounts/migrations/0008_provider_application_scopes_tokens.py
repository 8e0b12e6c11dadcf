"""Provider applications' scopes a list of scope tokens, as the API and (since 2026-11-29) the admin take them. The
admin stored any JSON: a text (listed by the API as a text, sent one character a scope), numbers (the connect page
was a 500). A text becomes its tokens, a list keeps its texts' tokens, anything else is no scope."""

from django.db import migrations


def tokens(scopes) -> list[str]:
    if isinstance(scopes, str):
        return scopes.split()
    if isinstance(scopes, list):
        return [token for scope in scopes if isinstance(scope, str) for token in scope.split()]
    return []


def scopes_tokens(apps, schema_editor):
    ProviderApplication = apps.get_model("accounts", "ProviderApplication")
    for application in ProviderApplication.objects.only("pk", "scopes"):
        cleaned = tokens(application.scopes)
        if cleaned != application.scopes:
            ProviderApplication.objects.filter(pk=application.pk).update(scopes=cleaned)


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0007_login_failures"),
    ]

    operations = [migrations.RunPython(scopes_tokens, migrations.RunPython.noop)]
