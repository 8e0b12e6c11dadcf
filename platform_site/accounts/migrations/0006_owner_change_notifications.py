"""On PostgreSQL, announce every change to API owners and core users (`NOTIFY platform_owners_changed`, delivered at
commit): the processes that keep them between requests (platform_site/api/owner_cache.py) forget them then. Any
writer is heard: the API, the admin, management commands, plain SQL. Nothing on SpatiaLite, which has no
notifications (the cache is off there)."""

from django.conf import settings
from django.db import migrations

CHANNEL = "platform_owners_changed"  # platform_site.api.owner_cache.CHANNEL

TABLES = ("auth_user", "accounts_coreuser")
FUNCTION = "platform_owners_changed"

CREATE = [
    f"""CREATE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('{CHANNEL}', '');
    RETURN NULL;
END
$$""",
    *(
        f"CREATE TRIGGER {FUNCTION} AFTER UPDATE OR DELETE OR TRUNCATE ON {table} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
        for table in TABLES
    ),
]
DROP = [*(f"DROP TRIGGER IF EXISTS {FUNCTION} ON {table}" for table in TABLES), f"DROP FUNCTION IF EXISTS {FUNCTION}()"]


def _run(statements):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        for statement in statements:
            schema_editor.execute(statement)

    return run


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0005_credential_refresh_claim"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [migrations.RunPython(_run(CREATE), _run(DROP), elidable=False)]
