"""A journal segment as a Spark input partition: it reads the segment as journaled, the same on
every read and after pickling to an executor, and names a segment that is gone (no broker, no
Spark session)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.messages import messages

from kafka_share_eos.journal import Journal, JournalError
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.source.planning import SegmentPartition


def source_options(journal: Path) -> SourceOptions:
    return SourceOptions.parse({
        "kafka.bootstrap.servers": "localhost:9092", "kafka.share.group.id": "orders",
        "subscribe": "orders", "journalPath": str(journal),
    })


def test_a_segment_partition_reads_its_segment_the_same_on_every_read(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    written = to_record_batch(messages())
    journal.write(1, written.slice(0, 1))
    journal.write(2, written)
    partition = SegmentPartition(2)
    options = source_options(tmp_path)

    first = partition.rows(options, journal)
    assert first.equals(pa.Table.from_batches([written]))
    assert first.column("offset").to_pylist() == [0, 1, 2, 3]
    assert partition.rows(options, journal).equals(first)
    assert SegmentPartition(1).rows(options, journal).num_rows == 1


def test_a_segment_partition_survives_pickling_to_an_executor(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    journal.write(7, to_record_batch(messages()))
    shipped = pickle.loads(pickle.dumps(SegmentPartition(7)))
    assert isinstance(shipped, SegmentPartition)
    assert (shipped.seq, shipped.value) == (7, 7)
    again = pickle.loads(pickle.dumps(journal))
    assert shipped.rows(source_options(tmp_path), again).column("offset").to_pylist() == [
        0, 1, 2, 3]


def test_a_segment_partition_of_a_purged_segment_is_refused_by_name(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    journal.write(3, to_record_batch(messages()))
    assert journal.purge(3) == [3]
    with pytest.raises(JournalError, match=r"journal segment 3 .* is missing or unfinished"):
        SegmentPartition(3).rows(source_options(tmp_path), journal)

