"""Arrow schemas as SQL tables, and the checks a target table passes before upserts: every
supported Arrow type gets a column that gives its values back unchanged, a type without one is
refused by name, and a table is used only with a unique key on exactly the key columns and a
column for every column of the batch (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from kafka_share_eos.errors import MissingColumnsError, TargetTableError
from kafka_share_eos.sinks.sql_schema import open_target, sql_type, table_from_schema
from kafka_share_eos.sinks.sql_values import python_rows

pytestmark = pytest.mark.timeout(120)

UTC_NOON = dt.datetime(2024, 5, 6, 12, 0, 1, 250_000, tzinfo=dt.UTC)
# One row of every Arrow type with a SQL column, and what each maps to.
TYPED = [
    ("flag", pa.bool_(), True, sa.Boolean),
    ("tiny", pa.int8(), -7, sa.SmallInteger),
    ("small", pa.int16(), 30_000, sa.SmallInteger),
    ("byte", pa.uint8(), 255, sa.SmallInteger),
    ("int", pa.int32(), -2_000_000_000, sa.Integer),
    ("ushort", pa.uint16(), 65_535, sa.Integer),
    ("big", pa.int64(), 9_000_000_000_000, sa.BigInteger),
    ("uint", pa.uint32(), 4_000_000_000, sa.BigInteger),
    ("single", pa.float32(), 1.5, sa.Float),
    ("double", pa.float64(), 0.1, sa.Double),
    ("text", pa.string(), "naïve ' \" text", sa.Text),
    ("long_text", pa.large_string(), "x" * 300, sa.Text),
    ("blob", pa.binary(), b"\x00\xff", sa.LargeBinary),
    ("long_blob", pa.large_binary(), b"\x01", sa.LargeBinary),
    ("fixed", pa.binary(3), b"abc", sa.LargeBinary),
    ("stamp", pa.timestamp("us"), dt.datetime(2024, 5, 6, 12, 0, 1, 250_000), sa.DateTime),
    ("stamp_tz", pa.timestamp("us", "UTC"), UTC_NOON, sa.DateTime),
    ("day", pa.date32(), dt.date(2024, 2, 29), sa.Date),
    ("clock", pa.time64("us"), dt.time(23, 59, 58, 1), sa.Time),
    ("money", pa.decimal128(12, 3), decimal.Decimal("123456789.125"), sa.Numeric),
]
PARTIAL_INDEX = "CREATE UNIQUE INDEX orders_key ON orders (tenant, id) WHERE amount > 0"
PLAIN = "CREATE TABLE orders (tenant TEXT, id BIGINT, amount BIGINT)"
KEYED = pa.schema([("tenant", pa.string()), ("id", pa.int64()), ("amount", pa.int64())])


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[sa.Engine]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'target.db'}"
    else:
        url = request.getfixturevalue("postgres_url")
    created = sa.create_engine(url)
    yield created
    created.dispose()


def existing(engine: sa.Engine, *ddl: str) -> None:
    with engine.begin() as conn:
        for statement in ddl:
            conn.exec_driver_sql(statement)


def opened(engine: sa.Engine, schema: pa.Schema = KEYED, keys: tuple[str, ...] = ("tenant", "id"),
           *, create: bool = False, db_schema: str | None = None) -> sa.Table:
    with engine.begin() as conn:
        return open_target(conn, "orders", schema, keys, db_schema=db_schema, create=create)


@pytest.mark.parametrize(("name", "arrow", "value", "expected"), TYPED,
                         ids=[name for name, *_ in TYPED])
def test_each_arrow_type_maps_to_its_sql_type(
    name: str, arrow: pa.DataType, value: object, expected: type
) -> None:
    assert isinstance(sql_type(pa.field(name, arrow)), expected)


def test_timestamps_keep_their_zone_and_decimals_their_scale() -> None:
    assert sql_type(pa.field("t", pa.timestamp("ms", "Europe/Paris"))).timezone is True
    assert sql_type(pa.field("t", pa.timestamp("ns"))).timezone is False
    money = sql_type(pa.field("m", pa.decimal128(20, 4)))
    assert (money.precision, money.scale) == (20, 4)


@pytest.mark.parametrize("arrow", [pa.list_(pa.int64()), pa.struct([("a", pa.int8())]),
                                   pa.map_(pa.string(), pa.int64()), pa.null(),
                                   pa.dictionary(pa.int32(), pa.string())])
def test_a_type_without_a_sql_column_is_refused_naming_the_column(arrow: pa.DataType) -> None:
    with pytest.raises(TargetTableError, match=rf"column 'tags' has Arrow type {arrow}"):
        sql_type(pa.field("tags", arrow))


def test_a_table_from_a_schema_has_the_key_columns_as_its_primary_key() -> None:
    table = table_from_schema("orders", KEYED, ["tenant", "id"], "sales")
    assert table.fullname == "sales.orders"
    assert [c.name for c in table.primary_key.columns] == ["tenant", "id"]
    assert [(c.name, c.nullable) for c in table.columns] == [
        ("tenant", False), ("id", False), ("amount", True)]


def test_a_created_table_gives_every_value_back_unchanged(engine: sa.Engine) -> None:
    schema = pa.schema([("id", pa.int64()), *[(name, arrow) for name, arrow, _, _ in TYPED]])
    row = pa.table({"id": [1], **{name: pa.array([value], arrow)
                                  for name, arrow, value, _ in TYPED}}, schema=schema)
    table = opened(engine, schema, ("id",), create=True)
    with engine.begin() as conn:
        conn.execute(sa.insert(table), [dict(zip(row.column_names, values, strict=True))
                                        for values in python_rows(row)])
        stored = conn.execute(sa.select(table)).mappings().one()
    for name, _, value, _ in TYPED:
        read = stored[name]
        if isinstance(value, dt.datetime) and value.tzinfo is not None and read.tzinfo is None:
            read = read.replace(tzinfo=dt.UTC)  # SQLite keeps no zone: the value is UTC
        expected = pytest.approx(value) if isinstance(value, float) else value
        assert read == expected, name


def test_a_missing_table_is_refused_unless_it_may_be_created(engine: sa.Engine) -> None:
    with pytest.raises(TargetTableError,
                       match=r"table 'orders' does not exist; create it with a unique key on "
                             r"\['tenant', 'id'\] or pass create_table=True"):
        opened(engine)
    created = opened(engine, create=True)
    assert created.c.keys() == ["tenant", "id", "amount"]
    reflected = opened(engine)
    assert {c.name for c in reflected.primary_key.columns} == {"tenant", "id"}


@pytest.mark.parametrize("ddl", [
    (f"{PLAIN[:-1]}, PRIMARY KEY (id, tenant))",),
    (f"{PLAIN[:-1]}, UNIQUE (tenant, id))",),
    (PLAIN, "CREATE UNIQUE INDEX orders_key ON orders (id, tenant)"),
], ids=["primary-key", "unique-constraint", "unique-index"])
def test_a_table_with_a_unique_key_on_exactly_the_key_columns_is_used(
    engine: sa.Engine, ddl: tuple[str, ...]
) -> None:
    existing(engine, *ddl)
    assert opened(engine).c.keys() == ["tenant", "id", "amount"]


@pytest.mark.parametrize("ddl", [
    PLAIN,
    "CREATE TABLE orders (tenant TEXT, id BIGINT PRIMARY KEY, amount BIGINT)",
    f"{PLAIN[:-1]}, UNIQUE (tenant, id, amount))",
], ids=["no-key", "key-on-fewer-columns", "key-on-more-columns"])
def test_a_table_without_a_unique_key_on_exactly_the_key_columns_is_refused(
    engine: sa.Engine, ddl: str
) -> None:
    existing(engine, ddl)
    with pytest.raises(TargetTableError, match=r"table 'orders' has no primary key, unique "
                                               r"constraint or unique index on exactly the key "
                                               r"columns \['tenant', 'id'\]"):
        opened(engine)


@pytest.mark.postgres
def test_a_partial_unique_index_is_no_key_on_postgresql(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    existing(engine, PLAIN, PARTIAL_INDEX)
    with pytest.raises(TargetTableError, match="no primary key, unique constraint or unique"):
        opened(engine)
    engine.dispose()


def test_a_partial_unique_index_is_no_key_on_sqlite(tmp_path: Path) -> None:
    engine = sa.create_engine(f"sqlite:///{tmp_path / 'target.db'}")
    existing(engine, PLAIN, PARTIAL_INDEX)
    with pytest.raises(TargetTableError, match="no primary key, unique constraint or unique"):
        opened(engine)


def test_a_table_lacking_a_column_of_the_batch_is_refused_naming_it(engine: sa.Engine) -> None:
    existing(engine, "CREATE TABLE orders (tenant TEXT, id BIGINT, PRIMARY KEY (tenant, id))")
    with pytest.raises(MissingColumnsError) as refused:
        opened(engine)
    assert refused.value.missing == ("amount",)
    assert refused.value.where == "table 'orders'"


@pytest.mark.postgres
def test_a_table_in_another_schema_is_named_with_it(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    existing(engine, "CREATE SCHEMA sales")
    with pytest.raises(TargetTableError, match=r"table 'sales\.orders' does not exist"):
        opened(engine, db_schema="sales")
    assert opened(engine, db_schema="sales", create=True).fullname == "sales.orders"
    with engine.connect() as conn:
        assert sa.inspect(conn).has_table("orders", "sales")
        assert not sa.inspect(conn).has_table("orders")
    existing(engine, "ALTER TABLE sales.orders DROP COLUMN amount")
    with pytest.raises(MissingColumnsError, match=r"table 'sales\.orders' lacks column"):
        opened(engine, db_schema="sales")
    engine.dispose()
