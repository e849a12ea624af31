"""What every dead-letter sink offers: a sink names its target and writes and reads letters, or
cannot be made; it counts what it reads and has nothing to release unless it says so; and a
strategy hands its refused records to any sink that keeps that contract."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from helpers.batches import source_rows
from helpers.unit2_letters import by_id, rejected

from kafka_share_eos.deadletter import (
    DEAD_LETTER_SCHEMA,
    DeadLetterPolicy,
    DeadLetterSink,
    DeltaDeadLetters,
    KafkaDeadLetters,
    SqlDeadLetters,
)
from kafka_share_eos.strategies import IdempotentUpsertSink


class ListDeadLetters(DeadLetterSink):
    """A sink of the user's own: letters kept in a table in memory, first per record."""

    def __init__(self) -> None:
        self.letters = DEAD_LETTER_SCHEMA.empty_table()

    @property
    def target(self) -> str:
        return "memory:list"

    def write(self, letters: pa.Table) -> int:
        known = pc.is_in(letters["letter_id"], self.letters["letter_id"].combine_chunks())
        new = letters.filter(pc.invert(known))
        self.letters = pa.concat_tables([self.letters, new])
        return int(new.num_rows)

    def read(self) -> pa.Table:
        return self.letters


def test_a_sink_without_a_target_write_and_read_cannot_be_made() -> None:
    class WriteOnly(DeadLetterSink):
        @property
        def target(self) -> str:
            return "nowhere"

        def write(self, letters: pa.Table) -> int:
            return 0

    with pytest.raises(TypeError, match="abstract"):
        DeadLetterSink()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="read"):
        WriteOnly()  # type: ignore[abstract]


def test_a_sink_counts_the_letters_it_reads_and_closes_with_nothing_to_release() -> None:
    sink = ListDeadLetters()
    letters = rejected(3)

    assert sink.count() == 0
    assert sink.write(letters) == 3 and sink.write(letters) == 0
    assert sink.count() == 3
    sink.close()
    assert by_id(sink.read()) == by_id(letters)


def test_every_shipped_sink_keeps_the_contract(tmp_path: Path) -> None:
    assert all(issubclass(kind, DeadLetterSink)
               for kind in (SqlDeadLetters, DeltaDeadLetters, KafkaDeadLetters))
    delta = DeltaDeadLetters(str(tmp_path / "letters"))
    delta.write(rejected(2))
    # The Delta sink counts through the base class: what it reads.
    assert delta.count() == delta.read().num_rows == 2


def test_a_strategy_hands_its_refused_records_to_a_sink_of_the_users_own(
    tmp_path: Path,
) -> None:
    dead = ListDeadLetters()
    upsert = IdempotentUpsertSink.sql(
        f"sqlite:///{tmp_path / 'orders.db'}", "orders", key_columns=["order_id"],
        create_table=True, dead_letters=DeadLetterPolicy(dead),
        transform=lambda rows: pa.table({"order_id": pa.array(
            [json.loads(v)["order_id"] for v in rows["value"].to_pylist()], pa.int64())}),
    )
    values = [b'{"order_id": 1}', b"not json", b'{"order_id": 3}']
    rows = source_rows(key=[b"a", b"b", b"c"], value=values, topic="orders", partition=0,
                       offset=[0, 1, 2], deliveryCount=1)

    report = upsert.apply(rows, 0)
    upsert.close()

    assert (report.rows_written, report.dead_lettered) == (2, 1)
    (letter,) = dead.read().to_pylist()
    assert (letter["letter_id"], letter["stage"], letter["value"]) == (
        "orders/0/1", "transform", b"not json")
