"""One row by column equality, without building an ORM query each time: for the lookups every request makes.

The ORM compiles a queryset to SQL on every call, which costs about twice a primary-key lookup itself; the
bearer-token check and the core-user check run on every request, so they use this instead. The SQL and the
column converters are built once per model, columns and database, and the row becomes a model instance through
`Model.from_db`, exactly as the ORM would build it (same converters, so SQLite's text UUIDs and dates too).
"""

from functools import cache

from django.core.exceptions import ValidationError
from django.db import connections, router
from django.db.models import Model


@cache
def _compiled(model: type[Model], columns: tuple[str, ...], alias: str) -> tuple[str, list[str], list[tuple]]:
    connection = connections[alias]
    quote = connection.ops.quote_name
    meta = model._meta
    fields = meta.concrete_fields
    where = " AND ".join(f"{quote(meta.get_field(name).column)} = %s" for name in columns)
    sql = f"SELECT {', '.join(quote(f.column) for f in fields)} FROM {quote(meta.db_table)} WHERE {where}"
    converters = []
    for position, field in enumerate(fields):
        column = field.get_col(meta.db_table)
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if found:
            converters.append((position, column, found))
    return sql, [f.attname for f in fields], converters


def row_get(model: type[Model], **equals) -> Model | None:
    """The instance of `model` whose fields equal `equals` (a foreign key given the related primary key), or
    None when there is none or a value cannot be one of the column (a malformed UUID, text for an integer).
    The fields must identify at most one row (a primary key, a unique column)."""
    alias = router.db_for_read(model)
    connection = connections[alias]
    sql, names, converters = _compiled(model, tuple(equals), alias)
    params = []
    for name, value in equals.items():
        field = model._meta.get_field(name)
        target = field.target_field if field.is_relation else field
        try:
            params.append(target.get_db_prep_value(target.to_python(value), connection))
        except (ValidationError, ValueError, TypeError):
            return None
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    values = list(row)
    for position, column, functions in converters:
        for function in functions:
            values[position] = function(values[position], column, connection)
    return model.from_db(alias, names, values)
