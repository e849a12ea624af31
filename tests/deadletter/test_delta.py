"""Dead letters in a Delta table: the first write creates it, letters are merged in on their id
so a replayed batch or another pipeline's letter for the same record adds nothing, they read back
as written, and a table that lost a data file is named as such once the retries run out."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers.unit2_letters import by_id, rejected, uncoordinated

from kafka_share_eos.deadletter import DEAD_LETTER_SCHEMA, DeltaDeadLetters
from kafka_share_eos.errors import CommitConflictError

pytestmark = pytest.mark.timeout(120)


def test_letters_are_merged_in_once_and_read_back_as_written(tmp_path: Path) -> None:
    path = str(tmp_path / "letters")
    sink = DeltaDeadLetters(path)
    first, content = rejected(4), uncoordinated([5, 6])
    later = rejected(3, first_offset=2, stage="delivery-limit", batch_id=1)

    assert sink.target == f"delta:{path}"
    assert sink.read() == DEAD_LETTER_SCHEMA.empty_table() and sink.count() == 0
    assert sink.write(first) == 4  # creates the table
    assert sink.write(content) == 2
    assert sink.write(first) == 0  # a replayed batch
    assert sink.write(later) == 1  # two of its records already have a letter
    assert sink.write(first.slice(0, 0)) == 0

    read = sink.read()
    assert read.schema == DEAD_LETTER_SCHEMA
    assert by_id(read) == by_id(pa.concat_tables([first, content, later.slice(2, 1)]))
    assert sink.count() == 7


def test_letters_of_one_record_in_one_batch_keep_the_first(tmp_path: Path) -> None:
    sink = DeltaDeadLetters(str(tmp_path / "letters"))
    first, again = rejected(2), rejected(2, stage="delivery-limit", batch_id=3)

    assert sink.write(pa.concat_tables([first, again])) == 2
    assert by_id(sink.read()) == by_id(first)


def test_pipelines_sharing_the_table_keep_one_letter_per_record(tmp_path: Path) -> None:
    path = str(tmp_path / "letters")
    one, other = DeltaDeadLetters(path), DeltaDeadLetters(path)
    letters = rejected(6)

    assert one.write(letters.slice(0, 4)) == 4
    assert other.write(letters.slice(2, 4)) == 2
    assert one.write(letters) == 0

    assert by_id(other.read()) == by_id(letters)


def test_a_table_that_lost_a_data_file_is_named_once_the_retries_run_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "letters"
    sink = DeltaDeadLetters(str(path))
    sink.write(rejected(2))
    for lost in path.glob("*.parquet"):
        lost.unlink()

    with pytest.raises(CommitConflictError, match="a data file that version lists is missing"):
        sink.write(rejected(2, first_offset=2))
    assert DeltaTable(str(path)).version() == 0
