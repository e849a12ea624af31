"""The SQL upsert sink refuses targets it cannot make idempotent, names what is missing, and
keeps hostile table names, column names and values out of the SQL."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from kafka_share_eos.strategies import (
    IdempotentUpsertSink,
    MissingColumnsError,
    SinkConfigurationError,
    TargetTableError,
)

pytestmark = pytest.mark.timeout(120)

ITEMS = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["one", "two"]})


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'guards.db'}"
    return str(request.getfixturevalue("postgres_url"))


def _create(url: str, *constraints: sa.SchemaItem, name: str = "items") -> None:
    engine = sa.create_engine(url)
    table = sa.Table(
        name,
        sa.MetaData(),
        sa.Column("id", sa.BigInteger),
        sa.Column("name", sa.Text),
        *constraints,
    )
    table.create(engine)
    engine.dispose()


# Factories: schema items belong to one table, and each test run creates its own.
@pytest.mark.parametrize(
    "constraints",
    [
        lambda: (),
        lambda: (sa.PrimaryKeyConstraint("id", "name"),),
        lambda: (sa.UniqueConstraint("name"),),
    ],
    ids=["no-key", "wider-key", "other-key"],
)
def test_table_without_unique_key_on_exactly_the_keys_is_refused(
    url: str, constraints: Callable[[], tuple[sa.SchemaItem, ...]]
) -> None:
    """Refused when the sink is built; built without that check, at the first batch."""
    _create(url, *constraints())
    with pytest.raises(TargetTableError, match=r"'items'.*\['id'\]"):
        IdempotentUpsertSink.sql(url, "items", key_columns=["id"])
    sink = IdempotentUpsertSink.sql(url, "items", key_columns=["id"], check_on_create=False)
    with pytest.raises(TargetTableError, match=r"'items'.*\['id'\]"):
        sink.apply(ITEMS, 0)
    sink.close()


@pytest.mark.parametrize(
    "constraint",
    [
        lambda: sa.PrimaryKeyConstraint("id"),
        lambda: sa.UniqueConstraint("id"),
        lambda: sa.Index("items_id", "id", unique=True),
    ],
    ids=["primary-key", "unique-constraint", "unique-index"],
)
def test_any_unique_key_on_the_key_columns_is_accepted(
    url: str, constraint: Callable[[], sa.SchemaItem]
) -> None:
    _create(url, constraint())
    sink = IdempotentUpsertSink.sql(url, "items", key_columns=["id"])
    assert sink.apply(ITEMS, 0).rows_written == 2
    assert sink.apply(ITEMS, 1).already_applied == 2
    sink.close()


def test_missing_table_needs_create_table(url: str) -> None:
    with pytest.raises(TargetTableError, match=r"'absent' does not exist.*create_table=True"):
        IdempotentUpsertSink.sql(url, "absent", key_columns=["id"])
    sink = IdempotentUpsertSink.sql(url, "absent", key_columns=["id"], check_on_create=False)
    with pytest.raises(TargetTableError, match=r"'absent' does not exist.*create_table=True"):
        sink.apply(ITEMS, 0)
    sink.close()


def test_columns_missing_from_batch_or_table_are_named(url: str) -> None:
    _create(url, sa.PrimaryKeyConstraint("id"))
    sink = IdempotentUpsertSink.sql(url, "items", key_columns=["id"], version_column="rev")
    with pytest.raises(MissingColumnsError, match=r"lacks column\(s\) \['rev'\]") as missing:
        sink.apply(ITEMS, 0)
    assert missing.value.missing == ("rev",)

    wider = ITEMS.append_column("colour", pa.array(["red", "blue"]))
    sink = IdempotentUpsertSink.sql(url, "items", key_columns=["id"])
    with pytest.raises(MissingColumnsError, match=r"table 'items' lacks column\(s\) \['colour'\]"):
        sink.apply(wider, 0)
    sink.close()


def test_null_keys_are_refused_with_the_record_named(url: str) -> None:
    batch = pa.table(
        {"topic": ["t", "t"], "partition": [0, 0], "offset": pa.array([5, None], pa.int64())}
    )
    sink = IdempotentUpsertSink.sql(url, "events", create_table=True)
    with pytest.raises(SinkConfigurationError, match=r"'offset' is null in 1 row.*offset=None"):
        sink.apply(batch, 3)
    sink.close()


@pytest.mark.parametrize("bulk_threshold", [10_000, 1], ids=["rows", "copy"])
def test_other_constraint_violations_name_the_table(url: str, bulk_threshold: int) -> None:
    _create(url, sa.PrimaryKeyConstraint("id"), sa.CheckConstraint("length(name) < 4"))
    sink = IdempotentUpsertSink.sql(url, "items", key_columns=["id"], bulk_threshold=bulk_threshold)
    too_long = pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["one", "seven"]})
    with pytest.raises(TargetTableError, match=r"batch 5 violates a constraint of table '.*items'"):
        sink.apply(too_long, 5)
    sink.close()


HOSTILE_TABLE = 'we"ird; DROP TABLE victims; -- täble 📦'
HOSTILE_KEY = "k\"ey'); DELETE FROM victims; --"
HOSTILE_COLUMN = "va lue;\t\"'ü"
HOSTILE_VALUES = ["'); DROP TABLE victims; --", 'a"b\\c\n\x01', "%(x)s :name ? $1"]


@pytest.mark.parametrize("bulk_threshold", [10_000, 1], ids=["rows", "copy"])
def test_hostile_names_and_values_stay_data(url: str, bulk_threshold: int) -> None:
    engine = sa.create_engine(url)
    victims = sa.Table("victims", sa.MetaData(), sa.Column("id", sa.Integer, primary_key=True))
    victims.create(engine)
    batch = pa.table(
        {
            HOSTILE_KEY: HOSTILE_VALUES,
            "rev": pa.array([1, 1, 1], pa.int64()),
            HOSTILE_COLUMN: [v.encode() for v in HOSTILE_VALUES],
        }
    )
    sink = IdempotentUpsertSink.sql(
        engine,
        HOSTILE_TABLE,
        key_columns=[HOSTILE_KEY],
        version_column="rev",
        create_table=True,
        bulk_threshold=bulk_threshold,
    )
    assert sink.apply(batch, 0).rows_written == 3
    newer = batch.set_column(1, "rev", pa.array([2, 2, 2], pa.int64()))
    assert sink.apply(newer, 1).rows_written == 3
    assert sink.apply(newer, 1).already_applied == 3

    inspector = sa.inspect(engine)
    assert {"victims", HOSTILE_TABLE} <= set(inspector.get_table_names())
    table = sa.Table(HOSTILE_TABLE, sa.MetaData(), autoload_with=engine)
    with engine.connect() as conn:
        rows = sorted(tuple(r) for r in conn.execute(sa.select(table)))
    assert rows == sorted((v, 2, v.encode()) for v in HOSTILE_VALUES)
    sink.close()
    engine.dispose()


def test_options_are_validated() -> None:
    with pytest.raises(SinkConfigurationError, match="dialect 'mysql'"):
        IdempotentUpsertSink.sql("mysql://localhost/db", "t")
    with pytest.raises(SinkConfigurationError, match="bulk_threshold"):
        IdempotentUpsertSink.sql("sqlite://", "t", bulk_threshold=0)
    with pytest.raises(SinkConfigurationError, match="write_path='executors' needs a PostgreSQL"):
        IdempotentUpsertSink.sql("sqlite://", "t", write_path="executors")
    with pytest.raises(SinkConfigurationError, match="cannot also be a key column"):
        IdempotentUpsertSink.sql("sqlite://", "t", key_columns=["id"], version_column="id")
