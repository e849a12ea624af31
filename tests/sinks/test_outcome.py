"""What a writer reports for a batch and the capabilities a strategy finds on it: the toolkit's
SQL and Delta writers declare what they implement and nothing else, a writer of one's own is
found capable of what it implements, and a writer that checks rows one part at a time checks
each part on its own (SQLite and local Delta tables)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
import pytest

from kafka_share_eos.errors import MissingColumnsError
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.sinks.outcome import (
    ChecksRows,
    ChecksRowsInTurn,
    FollowsStreamingQuery,
    KnowsApplied,
    OneByOne,
    RowChecker,
    SqlTarget,
    UpsertOutcome,
    WritesDataFrames,
)
from kafka_share_eos.sinks.sql import SqlUpsertWriter

CAPABILITIES = (ChecksRows, ChecksRowsInTurn, KnowsApplied, FollowsStreamingQuery,
                WritesDataFrames, SqlTarget)
ORDERS = pa.table({"id": pa.array([1, 2], pa.int64()), "amount": pa.array([10, 20], pa.int64())})


def capabilities(writer: object) -> set[str]:
    return {protocol.__name__ for protocol in CAPABILITIES if isinstance(writer, protocol)}


class KeysHeld:
    """A writer of one's own that can only say which keys its target holds."""

    def __init__(self, held: set[int]) -> None:
        self.held = held

    def applied(self, keys: pa.Table) -> list[bool]:
        return [key in self.held for key in keys.column("id").to_pylist()]


class RefusesNegativeAmounts:
    """A writer of one's own that checks rows without writing them."""

    def __init__(self) -> None:
        self.checked: list[list[int]] = []

    def check(self, table: pa.Table) -> None:
        self.checked.append(table.column("id").to_pylist())
        if any(amount < 0 for amount in table.column("amount").to_pylist()):
            raise ValueError("negative amount")


def test_an_outcome_is_a_value_of_written_already_applied_and_path() -> None:
    outcome = UpsertOutcome(written=3, already_applied=2, path="rows")
    assert outcome == UpsertOutcome(3, 2, "rows")
    assert outcome != UpsertOutcome(3, 2, "copy")
    assert dataclasses.asdict(outcome) == {"written": 3, "already_applied": 2, "path": "rows"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        outcome.written = 4  # type: ignore[misc]


def test_the_sql_writer_reports_rows_written_then_already_applied(tmp_path: Path) -> None:
    writer = SqlUpsertWriter(f"sqlite:///{tmp_path / 'orders.db'}", "orders", key_columns=["id"],
                             create_table=True)
    try:
        assert writer.upsert(ORDERS, 0) == UpsertOutcome(2, 0, "rows")
        assert writer.upsert(ORDERS, 1) == UpsertOutcome(0, 2, "rows")
        assert writer.upsert(ORDERS.slice(0, 0), 2) == UpsertOutcome(0, 0, "rows")
    finally:
        writer.close()


def test_the_toolkits_writers_declare_what_they_implement(tmp_path: Path) -> None:
    sql = SqlUpsertWriter(f"sqlite:///{tmp_path / 'orders.db'}", "orders", key_columns=["id"])
    assert capabilities(sql) == {"ChecksRows", "ChecksRowsInTurn", "KnowsApplied", "SqlTarget"}
    assert sql.dialect == "sqlite"
    delta = DeltaAppendSink(str(tmp_path / "orders"))
    assert capabilities(delta) == {"ChecksRows", "FollowsStreamingQuery"}


def test_a_writer_of_ones_own_is_capable_of_what_it_implements() -> None:
    assert capabilities(KeysHeld({2})) == {"KnowsApplied"}
    assert KeysHeld({2}).applied(ORDERS) == [False, True]
    assert capabilities(RefusesNegativeAmounts()) == {"ChecksRows"}
    assert capabilities(object()) == set()


def test_one_by_one_checks_each_part_on_its_own() -> None:
    writer = RefusesNegativeAmounts()
    checker: RowChecker = OneByOne(writer)
    checker(ORDERS.slice(0, 1))
    checker(ORDERS.slice(1, 1))
    bad = pa.table({"id": pa.array([3], pa.int64()), "amount": pa.array([-1], pa.int64())})
    with pytest.raises(ValueError, match="negative amount"):
        checker(bad)
    checker.close()
    # Nothing was remembered between parts: a part checks the same after a refusal and a close.
    checker(ORDERS.slice(0, 1))
    assert writer.checked == [[1], [2], [3], [1]]


def test_one_by_one_raises_what_the_delta_sink_would_on_a_write(tmp_path: Path) -> None:
    checker = OneByOne(DeltaAppendSink(str(tmp_path / "orders"), columns=["id", "region"]))
    with pytest.raises(MissingColumnsError, match=r"lacks column\(s\) \['region'\]"):
        checker(ORDERS)
    checker(ORDERS.append_column("region", pa.array(["eu", "us"])))
    assert not (tmp_path / "orders").exists()
