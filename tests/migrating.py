"""Running migrations forwards or back to one of them in a test, over rows written in the older schema. A module
that does so uses the fixture `latest_schema_after` (tests/conftest.py): the tests after it need every migration."""

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(target: tuple[str, str]):
    """Migrate the test database to `target` (app label, migration name); returns the app registry of that state
    (historical models, to write rows as that schema had them)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate([target])
    return executor.loader.project_state([target]).apps


def migrate_latest() -> None:
    """Apply every migration (the state the rest of the suite expects)."""
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())
