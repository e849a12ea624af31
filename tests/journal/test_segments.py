"""The batch journal: segments written, listed, read and purged (no broker, no Spark)."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.messages import messages
from helpers.metrics import batch_metrics

from kafka_share_eos.journal import Journal, JournalError
from kafka_share_eos.journal.metrics_store import METRICS_DIR, MetricsStore
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA
from kafka_share_eos.journal.segments import segment_name
from kafka_share_eos.source.conversion import to_record_batch


def test_journal_round_trip_and_listing(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "j"))
    batch = to_record_batch(messages())
    for seq in (3, 1, 2):
        journal.write(seq, batch)
    assert journal.sequences() == [1, 2, 3]
    assert journal.read(2).equals(pa.Table.from_batches([batch]))
    assert journal.read(2).schema.equals(JOURNAL_SCHEMA)


def test_journal_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    journal.write(7, to_record_batch(messages()))
    assert os.listdir(tmp_path) == [segment_name(7)]
    # A writer that died before its rename leaves only a temp file, which is never a segment.
    (tmp_path / ".tmp-deadbeef").write_bytes(b"partial")
    assert journal.sequences() == [7]


def test_journal_purge_deletes_only_committed_segments(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    for seq in range(1, 6):
        journal.write(seq, to_record_batch(messages()))
    assert journal.purge(3) == [1, 2, 3]
    assert journal.sequences() == [4, 5]
    assert journal.purge(3) == []


def test_journal_missing_segment_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(JournalError, match="segment 9"):
        Journal(str(tmp_path)).read(9)


def test_journal_survives_pickling_and_accepts_uris(tmp_path: Path) -> None:
    import pickle

    journal = Journal(f"file://{tmp_path}/uri-journal")
    journal.write(1, to_record_batch(messages()))
    clone = pickle.loads(pickle.dumps(journal))
    assert clone.read(1).num_rows == 4
    assert (tmp_path / "uri-journal" / segment_name(1)).exists()


def test_a_journal_opened_for_inspecting_reads_and_is_never_written(tmp_path: Path) -> None:
    import pickle

    Journal(str(tmp_path / "j")).write(1, to_record_batch(messages()))
    reader = pickle.loads(pickle.dumps(Journal(str(tmp_path / "j"), create=False)))

    assert reader.read(1).num_rows == 4
    for write in (lambda: reader.write(2, to_record_batch(messages())),
                  lambda: reader.write_slot(2, 0, to_record_batch(messages())),
                  lambda: reader.purge(1)):
        with pytest.raises(JournalError, match="opened for inspecting"):
            write()
    assert os.listdir(tmp_path / "j") == [segment_name(1)]


def test_journal_listing_and_purge_ignore_the_metrics_directory(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path))
    store = MetricsStore(str(tmp_path))
    for seq in (1, 2, 3):
        journal.write(seq, to_record_batch(messages()))
        store.write(batch_metrics(seq))
    # A stray segment-like name inside _metrics is not a segment either.
    (tmp_path / METRICS_DIR / segment_name(9)).write_bytes(b"")
    assert journal.sequences() == [1, 2, 3]
    assert journal.purge(3) == [1, 2, 3]
    assert journal.sequences() == []
    assert store.sequences() == [1, 2, 3]
    assert store.read(2) == batch_metrics(2)
