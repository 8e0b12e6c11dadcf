"""One row by column equality, without building an ORM query each time: for the lookups every request makes.

The ORM compiles a queryset to SQL on every call, which costs about twice a primary-key lookup itself; the
bearer-token check and the core-user check run on every request, so they use this instead. The SQL and the
column converters are built once per model, columns and database, and the row becomes a model instance through
`Model.from_db`, exactly as the ORM would build it (same converters, so SQLite's text UUIDs and dates too).
"""

from functools import cache

from django.core.exceptions import ValidationError
from django.db import connections, router
from django.db.models import IntegerField, Model


@cache
def _shape(model: type[Model], alias: str) -> tuple[list[str], list[str], list[tuple]]:
    """The quoted columns of `model`, their attribute names and the converters of those that have some."""
    connection = connections[alias]
    meta = model._meta
    fields = meta.concrete_fields
    converters = []
    for position, field in enumerate(fields):
        column = field.get_col(meta.db_table)
        found = connection.ops.get_db_converters(column) + column.get_db_converters(connection)
        if found:
            converters.append((position, column, found))
    return [connection.ops.quote_name(f.column) for f in fields], [f.attname for f in fields], converters


def _instance(model: type[Model], alias: str, row) -> Model:
    _, names, converters = _shape(model, alias)
    connection = connections[alias]
    values = list(row)
    for position, column, functions in converters:
        for function in functions:
            values[position] = function(values[position], column, connection)
    return model.from_db(alias, names, values)


def _param(model: type[Model], name: str, value, connection):
    """`value` as the database value of `model.name`; ValidationError, ValueError or TypeError if it cannot be.
    An integer out of the column's range cannot be one either (ValueError): the ORM finds no row for it
    (`IntegerFieldOverflow`), while the driver, given it here, raised OverflowError (SQLite: a 500 for a signed
    token whose `sub` was 40 nines)."""
    field = model._meta.get_field(name)
    target = field.target_field if field.is_relation else field
    python = target.to_python(value)
    if isinstance(target, IntegerField) and python is not None:
        low, high = connection.ops.integer_field_range(target.get_internal_type())
        if (low is not None and python < low) or (high is not None and python > high):
            raise ValueError(f"{python} is out of the range of {model._meta.label}.{name}")
    return target.get_db_prep_value(python, connection)


@cache
def _row_sql(model: type[Model], names: tuple[str, ...], alias: str) -> str:
    quote = connections[alias].ops.quote_name
    columns, _, _ = _shape(model, alias)
    where = " AND ".join(f"{quote(model._meta.get_field(name).column)} = %s" for name in names)
    return f"SELECT {', '.join(columns)} FROM {quote(model._meta.db_table)} WHERE {where}"


def row_get(model: type[Model], **equals) -> Model | None:
    """The instance of `model` whose fields equal `equals` (a foreign key given the related primary key), or
    None when there is none or a value cannot be one of the column (a malformed UUID, text for an integer).
    The fields must identify at most one row (a primary key, a unique column)."""
    alias = router.db_for_read(model)
    connection = connections[alias]
    try:
        params = [_param(model, name, value, connection) for name, value in equals.items()]
    except (ValidationError, ValueError, TypeError):
        return None
    with connection.cursor() as cursor:
        cursor.execute(_row_sql(model, tuple(equals), alias), params)
        row = cursor.fetchone()
    return None if row is None else _instance(model, alias, row)


@cache
def _pair_sql(parent: type[Model], child: type[Model], foreign_key: str, alias: str) -> str:
    quote = connections[alias].ops.quote_name
    parent_columns, _, _ = _shape(parent, alias)
    child_columns, _, _ = _shape(child, alias)
    return (
        f"SELECT {', '.join('p.' + c for c in parent_columns)}, {', '.join('c.' + c for c in child_columns)} "
        f"FROM {quote(parent._meta.db_table)} p LEFT JOIN {quote(child._meta.db_table)} c "
        f"ON c.{quote(child._meta.get_field(foreign_key).column)} = p.{quote(parent._meta.pk.column)} "
        f"AND c.{quote(child._meta.pk.column)} = %s WHERE p.{quote(parent._meta.pk.column)} = %s"
    )


def row_get_with_child(
    parent: type[Model], parent_pk, child: type[Model], foreign_key: str, child_pk
) -> tuple[Model | None, Model | None]:
    """The `parent` row of primary key `parent_pk` and, in the same query, the `child` row of primary key
    `child_pk` if its `foreign_key` points at that parent: (parent, child), (parent, None) when the child is
    missing, malformed or another parent's, (None, None) when the parent is missing or malformed."""
    alias = router.db_for_read(parent)
    connection = connections[alias]
    try:
        parent_param = _param(parent, parent._meta.pk.name, parent_pk, connection)
    except (ValidationError, ValueError, TypeError):
        return None, None
    try:
        child_param = _param(child, child._meta.pk.name, child_pk, connection)
    except (ValidationError, ValueError, TypeError):
        return row_get(parent, **{parent._meta.pk.name: parent_pk}), None
    with connection.cursor() as cursor:
        cursor.execute(_pair_sql(parent, child, foreign_key, alias), [child_param, parent_param])
        row = cursor.fetchone()
    if row is None:
        return None, None
    width = len(parent._meta.concrete_fields)
    child_row = row[width:]
    found = child_row[child._meta.concrete_fields.index(child._meta.pk)] is not None
    return _instance(parent, alias, row[:width]), _instance(child, alias, child_row) if found else None
