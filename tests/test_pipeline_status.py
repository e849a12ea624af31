"""What a pipeline left behind: its journal's status, with the records of its SQLite
dead-letter sink counted when one is named (in the sinks' default table or another), on a local
disk or an object store; a missing journal or dead-letter table is named (no broker, no
Spark)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.messages import FakeMessage
from helpers.metrics import batch_metrics

from kafka_share_eos.deadletter import Rejection, letters, open_dead_letters
from kafka_share_eos.errors import LocationNotFoundError
from kafka_share_eos.journal import Journal, Segment
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.storage import Location


def segment(offsets: range) -> pa.RecordBatch:
    return to_record_batch([FakeMessage(offset, value=b"v") for offset in offsets])


def journaled(where: str | Location) -> None:
    """Batch 1 settled, batch 2 pending."""
    journal = Journal(where)
    journal.write(1, segment(range(10)))
    journal.write(2, segment(range(10, 14)))
    journal.metrics().write(batch_metrics(1))


def dead_letters(url: str, rows: list[int], table: str | None = None) -> None:
    sink = open_dead_letters(url, table=table)
    try:
        refused = [Rejection(i, "apply", ValueError("bad amount")) for i in rows]
        rejected = pa.Table.from_batches([segment(range(10))])
        assert sink.write(letters(rejected, refused, strategy="status", batch_id=1)) == len(rows)
    finally:
        sink.close()


def test_without_a_dead_letter_sink_the_status_is_the_journals(tmp_path: Path) -> None:
    journaled(str(tmp_path / "journal"))
    status = journal_status(str(tmp_path / "journal"))
    assert status.segments == (Segment(1, 10, True), Segment(2, 4, False))
    assert status.pending == [2]
    assert status.totals.records == 10
    assert status.dead_letters is None
    assert status.to_dict()["dead_letters"] is None


def test_the_records_of_a_sqlite_dead_letter_sink_are_counted(tmp_path: Path) -> None:
    journaled(str(tmp_path / "journal"))
    url = f"sqlite:///{tmp_path / 'dead.db'}"
    dead_letters(url, [0, 3, 7])
    status = journal_status(str(tmp_path / "journal"), url)
    assert status.dead_letters == 3
    assert status.to_dict()["dead_letters"] == 3
    assert status.pending == [2] and status.totals.batches == 1


def test_a_dead_letter_table_of_its_own_is_counted_apart(tmp_path: Path) -> None:
    journaled(str(tmp_path / "journal"))
    url = f"sqlite:///{tmp_path / 'dead.db'}"
    dead_letters(url, [1])
    dead_letters(url, [2, 4], table="orders_refused")
    assert journal_status(str(tmp_path / "journal"), url, "orders_refused").dead_letters == 2
    assert journal_status(str(tmp_path / "journal"), url).dead_letters == 1


def test_a_missing_dead_letter_table_is_named_and_not_created(tmp_path: Path) -> None:
    journaled(str(tmp_path / "journal"))
    url = f"sqlite:///{tmp_path / 'dead.db'}"
    dead_letters(url, [1])
    with pytest.raises(LocationNotFoundError, match="elsewhere"):
        journal_status(str(tmp_path / "journal"), url, "elsewhere")
    with pytest.raises(LocationNotFoundError):
        journal_status(str(tmp_path / "journal"), f"sqlite:///{tmp_path / 'absent.db'}")
    assert not (tmp_path / "absent.db").exists()


def test_a_missing_journal_is_named_before_the_dead_letters_are_read(tmp_path: Path) -> None:
    with pytest.raises(LocationNotFoundError, match=r"no journal at '.*absent'"):
        journal_status(str(tmp_path / "absent"), f"sqlite:///{tmp_path / 'dead.db'}")
    assert not (tmp_path / "absent").exists() and not (tmp_path / "dead.db").exists()


def test_a_journal_on_an_object_store_is_read_with_its_store_settings() -> None:
    uri = f"memory:///pipelines/{uuid.uuid4().hex}/journal"
    settings = {"allow_http": "true"}
    journaled(Location(uri, settings))
    status = journal_status(uri, storage_options=settings)
    assert status.location == uri
    assert [s.seq for s in status.segments] == [1, 2] and status.pending == [2]
    # Other settings make another client, and in memory another store: no journal there.
    with pytest.raises(LocationNotFoundError):
        journal_status(uri)
