"""Dead letters in an Iceberg table on pyiceberg's SQL catalog (SQLite and PostgreSQL): the first
write creates it, a letter is appended once per record whatever replays it or which pipeline
writes it, a lost commit race reads again, and letters read back as written."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import (
    BACKENDS,
    OtherWriterFirst,
    batches_committed,
    catalog_config,
    load,
    sql_catalog,
)
from helpers.unit2_letters import by_id, rejected, uncoordinated

from kafka_share_eos import IcebergDeadLetters
from kafka_share_eos.deadletter import DEAD_LETTER_SCHEMA
from kafka_share_eos.errors import TargetTableError
from kafka_share_eos.iceberg.snapshots import APPLICATION

pytestmark = pytest.mark.timeout(120)

TABLE = "dlq.letters"


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, request.param)


def test_each_record_gets_one_letter_and_letters_read_back_as_written(
    config: dict[str, str],
) -> None:
    sink = IcebergDeadLetters(TABLE, catalog=config)
    first, content = rejected(4), uncoordinated([5, 6])
    later = rejected(3, first_offset=2, stage="delivery-limit", batch_id=1)

    assert sink.target == f"iceberg:{config['name']}.{TABLE}"
    assert sink.read() == DEAD_LETTER_SCHEMA.empty_table() and sink.count() == 0
    assert sink.write(first) == 4  # creates the table
    assert sink.write(content) == 2
    assert sink.write(first) == 0  # a replayed batch
    assert sink.write(later) == 1  # two of its records already have a letter
    assert sink.write(pa.concat_tables([first, first.slice(0, 1)])) == 0

    read = sink.read()
    assert read.schema == DEAD_LETTER_SCHEMA
    assert by_id(read) == by_id(pa.concat_tables([first, content, later.slice(2, 1)]))
    # Writes that added nothing committed nothing.
    assert batches_committed(config, TABLE) == ["0", "0", "1"]
    snapshot = load(config, TABLE).current_snapshot()
    assert snapshot.summary[APPLICATION] == "kafka-share-eos/dead-letters"  # type: ignore[union-attr]


def test_a_pipeline_losing_a_commit_race_adds_only_the_letters_still_missing(
    config: dict[str, str],
) -> None:
    letters = rejected(6)
    one = IcebergDeadLetters(TABLE, catalog=sql_catalog(config, OtherWriterFirst))
    other = IcebergDeadLetters(TABLE, catalog=config)
    one.write(letters.slice(0, 1))
    OtherWriterFirst.before_next = lambda: other.write(letters.slice(2, 4))

    assert one.write(letters) == 1  # offset 1: the others hold letters now

    assert by_id(other.read()) == by_id(letters)
    assert other.count() == 6


def test_a_missing_table_is_refused_without_create_table(config: dict[str, str]) -> None:
    sink = IcebergDeadLetters(TABLE, catalog=config, create_table=False)

    with pytest.raises(TargetTableError, match="does not exist"):
        sink.check_target()
    with pytest.raises(TargetTableError, match="does not exist"):
        sink.write(rejected(1))
