"""Every row the target refuses is dead-lettered, on every write path, whatever raised it.

Each kind of refusal (a value too long for its column, a value that does not cast, CHECK, NOT
NULL, a foreign key, a unique violation on a key other than the identity) is put in a batch of
good rows and written through the small-batch path and the COPY path on PostgreSQL, and on
SQLite where SQLite enforces it; the bad row must be a dead letter with its error and every
other row in the target exactly once. Errors that are not about rows (a lost connection, a
timeout) still fail the batch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.batches import source_rows

from kafka_share_eos.deadletter import SqlDeadLetters
from kafka_share_eos.errors import DatabaseUnavailableError
from kafka_share_eos.strategies import DeadLetterPolicy, IdempotentUpsertSink

pytestmark = pytest.mark.timeout(120)

GOOD_ROWS = 12
BAD_OFFSET = 5

# The refused row of each kind, as the source delivers it (decoded by ``decode``), and a word
# its error must contain.
KINDS: dict[str, tuple[dict[str, Any], str]] = {
    "too-long": ({"name": "far too long for eight"}, "too long"),
    "bad-cast": ({"qty": "lots"}, "invalid input syntax"),
    "check": ({"qty": "-1"}, "check"),
    "not-null": ({"name": None}, "null"),
    "foreign-key": ({"cat_id": 99}, "foreign key"),
    "unique-other-key": ({"code": "TAKEN"}, "unique"),
}
# SQLite's error words; it has no length limit (varchar(8) is TEXT), so "too-long" is absent.
SQLITE_KINDS: dict[str, str] = {
    "bad-cast": "cannot store TEXT value in INTEGER column",
    "check": "CHECK constraint failed",
    "not-null": "NOT NULL constraint failed",
    "foreign-key": "FOREIGN KEY constraint failed",
    "unique-other-key": "UNIQUE constraint failed",
}

POSTGRES_DDL = [
    "CREATE TABLE categories (cat_id bigint PRIMARY KEY)",
    "INSERT INTO categories VALUES (1)",
    """CREATE TABLE items (
        item_id bigint PRIMARY KEY,
        name varchar(8) NOT NULL,
        qty integer NOT NULL CHECK (qty >= 0),
        cat_id bigint REFERENCES categories,
        code text UNIQUE
    )""",
    "INSERT INTO items VALUES (1000, 'held', 1, 1, 'TAKEN')",
]
SQLITE_DDL = [
    "CREATE TABLE categories (cat_id INTEGER PRIMARY KEY)",
    "INSERT INTO categories VALUES (1)",
    """CREATE TABLE items (
        item_id INTEGER PRIMARY KEY,
        name TEXT NOT NULL,
        qty INTEGER NOT NULL CHECK (qty >= 0),
        cat_id INTEGER REFERENCES categories,
        code TEXT UNIQUE
    ) STRICT""",
    "INSERT INTO items VALUES (1000, 'held', 1, 1, 'TAKEN')",
]
PATHS = {"rows": 10_000, "copy": 1}


def item(item_id: int, **changes: Any) -> bytes:
    fields = {"item_id": item_id, "name": f"n{item_id}", "qty": str(item_id), "cat_id": 1,
              "code": f"c{item_id}"}
    return json.dumps(fields | changes).encode()


def batch(bad: dict[int, dict[str, Any]]) -> pa.Table:
    """Source-shaped rows, one item per offset; the offsets in ``bad`` carry those changes."""
    values = [item(i, **bad.get(i, {})) for i in range(GOOD_ROWS)]
    return source_rows(topic="items", partition=0, offset=range(len(values)), value=values)


def decode(rows: pa.Table) -> pa.Table:
    """JSON to the item columns; ``qty`` stays text, so the target casts it."""
    items = [json.loads(v) for v in rows["value"].to_pylist()]
    return pa.table({
        "item_id": pa.array([i["item_id"] for i in items], pa.int64()),
        "name": pa.array([i["name"] for i in items], pa.string()),
        "qty": pa.array([i["qty"] for i in items], pa.string()),
        "cat_id": pa.array([i["cat_id"] for i in items], pa.int64()),
        "code": pa.array([i["code"] for i in items], pa.string()),
    })


def target(url: str, ddl: list[str]) -> sa.Engine:
    engine = sa.create_engine(url)
    if engine.dialect.name == "sqlite":
        # SQLite checks foreign keys only on connections that ask for it.
        sa.event.listen(engine, "connect", lambda conn, _: conn.execute("PRAGMA foreign_keys=ON"))
    with engine.begin() as conn:
        for statement in ddl:
            conn.exec_driver_sql(statement)
    return engine


def sink_for(engine: sa.Engine, dead: SqlDeadLetters, bulk_threshold: int) -> IdempotentUpsertSink:
    return IdempotentUpsertSink.sql(
        engine, "items", key_columns=["item_id"], transform=decode,
        dead_letters=DeadLetterPolicy(dead), bulk_threshold=bulk_threshold,
    )


def item_ids(engine: sa.Engine) -> list[int]:
    with engine.connect() as conn:
        return sorted(r[0] for r in conn.exec_driver_sql("SELECT item_id FROM items"))


def letters_by_offset(dead: SqlDeadLetters) -> dict[int, tuple[str, str]]:
    read = dead.read().to_pylist()
    return {r["offset"]: (r["stage"], r["error"]) for r in read}


def assert_refused(
    engine: sa.Engine, dead: SqlDeadLetters, sink: IdempotentUpsertSink,
    bad: dict[int, str],
) -> None:
    """Apply the batch twice (the second is a replay): the rows of ``bad`` are dead letters
    whose error names their fault, every other row is in the target once."""
    rows = batch({offset: KINDS[kind][0] for offset, kind in bad.items()})
    good = [i for i in range(GOOD_ROWS) if i not in bad]
    report = sink.apply(rows, 0)
    assert item_ids(engine) == [*good, 1000]
    letters = letters_by_offset(dead)
    assert sorted(letters) == sorted(bad)
    for offset, (stage, error) in letters.items():
        assert stage == "write"
        assert error_words(engine, bad[offset]).lower() in error.lower(), (bad[offset], error)
    assert (report.rows_written, report.dead_lettered) == (len(good), len(bad))

    replay = sink.apply(rows, 0)
    assert item_ids(engine) == [*good, 1000]
    assert dead.count() == len(bad)
    assert (replay.rows_written, replay.already_applied) == (0, len(good))


def error_words(engine: sa.Engine, kind: str) -> str:
    return SQLITE_KINDS[kind] if engine.dialect.name == "sqlite" else KINDS[kind][1]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("kind", KINDS)
def test_postgres_refused_row_is_dead_lettered(
    postgres_url: str, tmp_path: Path, kind: str, path: str
) -> None:
    engine = target(postgres_url, POSTGRES_DDL)
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")
    sink = sink_for(engine, dead, PATHS[path])
    assert_refused(engine, dead, sink, {BAD_OFFSET: kind})
    assert all(r.write_path.startswith(path) for r in sink.reports)
    sink.close()
    engine.dispose()


@pytest.mark.parametrize("path", PATHS)
def test_postgres_every_kind_in_one_batch(postgres_url: str, tmp_path: Path, path: str) -> None:
    engine = target(postgres_url, POSTGRES_DDL)
    dead = SqlDeadLetters(postgres_url, "dead_letters")
    sink = sink_for(engine, dead, PATHS[path])
    assert_refused(engine, dead, sink, dict(zip([0, 3, 4, 7, 10, 11], KINDS, strict=True)))
    sink.close()
    engine.dispose()


@pytest.mark.parametrize("kind", SQLITE_KINDS)
def test_sqlite_refused_row_is_dead_lettered(tmp_path: Path, kind: str) -> None:
    engine = target(f"sqlite:///{tmp_path / 'items.db'}", SQLITE_DDL)
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")
    sink = sink_for(engine, dead, PATHS["rows"])
    assert_refused(engine, dead, sink, {BAD_OFFSET: kind})
    sink.close()
    engine.dispose()


@pytest.mark.parametrize("where", ["postgres-rows", "postgres-copy", "sqlite"])
def test_a_row_conflicting_with_an_earlier_row_of_its_batch_is_dead_lettered(
    postgres_url: str, tmp_path: Path, where: str
) -> None:
    """Each of the two rows passes a check alone: the later one is refused after the earlier."""
    if where == "sqlite":
        engine = target(f"sqlite:///{tmp_path / 'items.db'}", SQLITE_DDL)
    else:
        engine = target(postgres_url, POSTGRES_DDL)
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")
    sink = sink_for(engine, dead, PATHS["copy" if where == "postgres-copy" else "rows"])
    report = sink.apply(batch({3: {"code": "twice"}, 8: {"code": "twice"}}), 0)
    assert item_ids(engine) == [i for i in range(GOOD_ROWS) if i != 8] + [1000]
    with engine.connect() as conn:
        owner = conn.exec_driver_sql("SELECT item_id FROM items WHERE code = 'twice'").all()
    assert owner == [(3,)]
    assert list(letters_by_offset(dead)) == [8]
    assert "unique" in letters_by_offset(dead)[8][1].lower()
    assert (report.rows_written, report.dead_lettered) == (GOOD_ROWS - 1, 1)
    sink.close()
    engine.dispose()


# A trigger doing ``action`` for the row with item_id 5: raising an SQLSTATE shows the database's
# own classification decides, whatever class psycopg and SQLAlchemy give the error.
ROW_5_TRIGGER = """
CREATE FUNCTION row_5() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.item_id = 5 THEN
        {action};
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER row_5 BEFORE INSERT ON items FOR EACH ROW EXECUTE FUNCTION row_5();
"""
RAISE = "RAISE EXCEPTION 'refused by trigger' USING ERRCODE = '{sqlstate}'"


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(
    ("sqlstate", "dead_lettered"),
    [("23514", True), ("22003", True), ("08006", False), ("57014", False), ("53100", False),
     ("40001", False)],
    ids=["check", "out-of-range", "connection-failure", "query-canceled", "disk-full",
         "serialization-failure"],
)
def test_postgres_errors_are_classified_by_sqlstate(
    postgres_url: str, tmp_path: Path, sqlstate: str, dead_lettered: bool, path: str
) -> None:
    trigger = ROW_5_TRIGGER.format(action=RAISE.format(sqlstate=sqlstate))
    engine = target(postgres_url, [*POSTGRES_DDL, trigger])
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")
    sink = sink_for(engine, dead, PATHS[path])
    if dead_lettered:
        sink.apply(batch({}), 0)
        assert item_ids(engine) == [i for i in range(GOOD_ROWS) if i != 5] + [1000]
        assert list(letters_by_offset(dead)) == [5]
    else:
        # A connection exception (class 08) is the database gone, which names the database; the
        # others are the driver's own error.
        expected = DatabaseUnavailableError if sqlstate.startswith("08") else sa.exc.DBAPIError
        with pytest.raises(expected) as raised:
            sink.apply(batch({}), 0)
        driver_error = raised.value.__cause__ if sqlstate.startswith("08") else raised.value
        assert isinstance(driver_error, sa.exc.DBAPIError)
        assert driver_error.orig.sqlstate == sqlstate  # type: ignore[union-attr]
        assert item_ids(engine) == [1000]
        assert dead.count() == 0
    sink.close()
    engine.dispose()


@pytest.mark.parametrize("path", PATHS)
def test_a_connection_lost_during_the_write_fails_the_batch(
    postgres_url: str, tmp_path: Path, path: str
) -> None:
    terminate = ROW_5_TRIGGER.format(action="PERFORM pg_terminate_backend(pg_backend_pid())")
    engine = target(postgres_url, [*POSTGRES_DDL, terminate])
    dead = SqlDeadLetters(f"sqlite:///{tmp_path / 'dead.db'}")
    sink = sink_for(engine, dead, PATHS[path])
    with pytest.raises(DatabaseUnavailableError, match="upsert of batch 0 into") as raised:
        sink.apply(batch({}), 0)
    assert isinstance(raised.value.__cause__, (sa.exc.OperationalError, psycopg.OperationalError))
    assert item_ids(engine) == [1000]
    assert dead.count() == 0
    sink.close()
    engine.dispose()
