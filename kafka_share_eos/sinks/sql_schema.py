"""Arrow schemas to SQLAlchemy tables, and the checks a target table must pass for upserts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from kafka_share_eos._libs import sa
from kafka_share_eos.errors import MissingColumnsError, TargetTableError


def sql_type(field: pa.Field) -> sa.types.TypeEngine[Any]:
    """The SQLAlchemy column type that stores values of an Arrow field without loss."""
    t = field.type
    types = pa.types
    mapped: sa.types.TypeEngine[Any] | None = None
    if types.is_boolean(t):
        mapped = sa.Boolean()
    elif types.is_int8(t) or types.is_int16(t) or types.is_uint8(t):
        mapped = sa.SmallInteger()
    elif types.is_int32(t) or types.is_uint16(t):
        mapped = sa.Integer()
    elif types.is_int64(t) or types.is_uint32(t):
        mapped = sa.BigInteger()
    elif types.is_float16(t) or types.is_float32(t):
        mapped = sa.Float()
    elif types.is_float64(t):
        mapped = sa.Double()
    elif types.is_string(t) or types.is_large_string(t):
        mapped = sa.Text()
    elif types.is_binary(t) or types.is_large_binary(t) or types.is_fixed_size_binary(t):
        mapped = sa.LargeBinary()
    elif types.is_timestamp(t):
        mapped = sa.DateTime(timezone=t.tz is not None)
    elif types.is_date(t):
        mapped = sa.Date()
    elif types.is_time(t):
        mapped = sa.Time()
    elif types.is_decimal(t):
        mapped = sa.Numeric(t.precision, t.scale)
    if mapped is None:
        raise TargetTableError(
            f"column {field.name!r} has Arrow type {t}, which has no SQL column type here; "
            "cast it (e.g. to string) before the sink or create the table yourself"
        )
    return mapped


def table_from_schema(
    name: str, schema: pa.Schema, key_columns: Sequence[str], db_schema: str | None
) -> sa.Table:
    """A table definition for ``schema`` whose primary key is ``key_columns``."""
    columns = [
        sa.Column(field.name, sql_type(field), nullable=field.name not in key_columns)
        for field in schema
    ]
    return sa.Table(
        name, sa.MetaData(), *columns, sa.PrimaryKeyConstraint(*key_columns), schema=db_schema
    )


# Where SQLAlchemy's inspector puts the WHERE clause of a partial index, per dialect (a string
# on PostgreSQL, a TextClause, which has no truth value, on SQLite).
_PARTIAL_INDEX_OPTIONS = ("postgresql_where", "sqlite_where")


def _unique_column_sets(
    inspector: sa.Inspector, name: str, db_schema: str | None
) -> list[set[str]]:
    sets = [set(inspector.get_pk_constraint(name, db_schema)["constrained_columns"] or ())]
    sets += [set(u["column_names"]) for u in inspector.get_unique_constraints(name, db_schema)]
    sets += [
        {c for c in index["column_names"] if c is not None}
        for index in inspector.get_indexes(name, db_schema)
        # A partial unique index cannot serve as an ON CONFLICT arbiter for every row.
        if index["unique"] and all(
            index.get("dialect_options", {}).get(option) is None
            for option in _PARTIAL_INDEX_OPTIONS
        )
    ]
    return [s for s in sets if s]


def open_target(
    conn: sa.Connection,
    name: str,
    schema: pa.Schema,
    key_columns: Sequence[str],
    *,
    db_schema: str | None,
    create: bool,
) -> sa.Table:
    """Reflect (or create, when ``create``) the target table and check that upserts can work.

    The table must have a primary key, unique constraint or (non-partial) unique index on
    exactly the key columns, and a column for every column of the batch.
    """
    shown = f"{db_schema}.{name}" if db_schema else name
    inspector = sa.inspect(conn)
    if not inspector.has_table(name, db_schema):
        if not create:
            raise TargetTableError(
                f"table {shown!r} does not exist; create it with a unique key on "
                f"{list(key_columns)} or pass create_table=True"
            )
        table = table_from_schema(name, schema, key_columns, db_schema)
        table.create(conn, checkfirst=True)
        return table
    if set(key_columns) not in _unique_column_sets(inspector, name, db_schema):
        raise TargetTableError(
            f"table {shown!r} has no primary key, unique constraint or unique index on exactly "
            f"the key columns {list(key_columns)}; without one, ON CONFLICT cannot make writes "
            "idempotent"
        )
    table = sa.Table(name, sa.MetaData(), schema=db_schema, autoload_with=conn)
    missing = [f for f in schema.names if f not in table.c]
    if missing:
        raise MissingColumnsError(f"table {shown!r}", missing, table.c.keys())
    return table
