"""Running migrations forwards or back to one of them in a test, over rows written in the older schema."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(target: tuple[str, str]):
    """Migrate the test database to `target` (app label, migration name); returns the app registry of that state
    (historical models, to write rows as that schema had them)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps
