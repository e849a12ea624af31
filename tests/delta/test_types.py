"""Values a Delta table cannot store are refused in Arrow, naming the column, and become dead
letters: an unsigned 64-bit integer beyond Delta's long ended in a Rust panic (a BaseException
no ``except Exception`` catches), text in a numeric column in a bare ``Exception``."""

from __future__ import annotations

from pathlib import Path

import deltalake
import pyarrow as pa
import pytest
from helpers.batches import source_rows

from kafka_share_eos import (
    CheckpointDedupStore,
    DeadLetterPolicy,
    DeltaAppendSink,
    DeltaDeadLetters,
    IdempotentUpsertSink,
    ValueNotStorableError,
)

TOO_BIG = 2**64 - 1


def batch(values: list[object], kind: pa.DataType, first_offset: int = 0) -> pa.Table:
    return source_rows(topic="t", partition=0,
                       offset=range(first_offset, first_offset + len(values)),
                       v=pa.array(values, kind))


def stored(uri: Path, *columns: str) -> dict[str, list[object]]:
    table = deltalake.DeltaTable(str(uri)).to_pyarrow_table()
    return table.sort_by("offset").select(list(columns)).to_pydict()


def letters(uri: Path) -> list[tuple[int, str]]:
    found = stored(uri, "offset", "error")
    return list(zip(found["offset"], found["error"], strict=True))


def test_upsert_dead_letters_values_the_table_cannot_store(tmp_path: Path) -> None:
    sink = IdempotentUpsertSink.delta(
        str(tmp_path / "target"),
        dead_letters=DeadLetterPolicy(DeltaDeadLetters(str(tmp_path / "letters"))),
    )
    sink.apply(batch([1, 2], pa.int64()), 0)
    overflow = sink.apply(batch([3, TOO_BIG, 5], pa.uint64(), 2), 1)
    text = sink.apply(batch(["7", "not a number"], pa.string(), 5), 2)
    assert (overflow.rows_written, overflow.dead_lettered) == (2, 1)
    assert (text.rows_written, text.dead_lettered) == (1, 1)
    assert stored(tmp_path / "target", "offset", "v") == {
        "offset": [0, 1, 2, 4, 5], "v": [1, 2, 3, 5, 7],
    }
    (first, first_error), (second, second_error) = letters(tmp_path / "letters")
    assert (first, second) == (3, 6)
    assert "column 'v' (uint64) does not fit int64" in first_error
    assert "column 'v' (string) does not fit int64" in second_error


def test_without_dead_letters_the_batch_fails_with_a_family_error_and_writes_nothing(
    tmp_path: Path,
) -> None:
    target = tmp_path / "target"
    sink = IdempotentUpsertSink.delta(str(target))
    with pytest.raises(ValueNotStorableError, match=r"column 'v'.*Delta table"):
        sink.apply(batch([1, TOO_BIG], pa.uint64()), 0)
    assert not deltalake.DeltaTable.is_deltatable(str(target))
    sink.apply(batch([1], pa.int64()), 0)
    with pytest.raises(ValueNotStorableError):
        sink.apply(batch([TOO_BIG], pa.uint64(), 1), 1)
    assert stored(target, "offset", "v") == {"offset": [0], "v": [1]}


def test_unsigned_values_are_stored_in_a_signed_type_that_holds_them(tmp_path: Path) -> None:
    rows = batch([200, 255], pa.uint8()).append_column("w", pa.array([4_000_000_000] * 2,
                                                                     pa.uint32()))
    IdempotentUpsertSink.delta(str(tmp_path / "target")).apply(rows, 0)
    assert stored(tmp_path / "target", "v", "w") == {"v": [200, 255], "w": [4_000_000_000] * 2}


def test_checkpoint_dedup_dead_letters_the_row_before_its_ledger_claims_it(tmp_path: Path) -> None:
    store = CheckpointDedupStore(
        str(tmp_path / "ledger"), DeltaAppendSink(str(tmp_path / "target")),
        dead_letters=DeadLetterPolicy(DeltaDeadLetters(str(tmp_path / "letters"))),
    )
    store.apply(batch([1, 2], pa.uint64()), 0)
    report = store.apply(batch([3, TOO_BIG, 5], pa.uint64(), 2), 1)
    assert (report.rows_written, report.dead_lettered) == (2, 1)
    assert [offset for offset, _ in letters(tmp_path / "letters")] == [3]
    # Unclaimed, the record is applied when it comes back with a value that fits.
    again = store.apply(batch([4], pa.uint64(), 3), 2)
    assert (again.rows_written, again.already_applied) == (1, 0)
    assert stored(tmp_path / "target", "offset", "v") == {
        "offset": [0, 1, 2, 3, 4], "v": [1, 2, 3, 4, 5],
    }


def test_delta_append_sink_alone_refuses_the_batch_with_a_family_error(tmp_path: Path) -> None:
    sink = DeltaAppendSink(str(tmp_path / "target"))
    sink(batch([1], pa.int64()), 0)
    with pytest.raises(ValueNotStorableError, match=r"column 'v' \(uint64\) does not fit int64"):
        sink(batch([TOO_BIG], pa.uint64(), 1), 1)
    assert stored(tmp_path / "target", "offset") == {"offset": [0]}
