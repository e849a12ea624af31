"""A journal's status as ``kafka-share-eos status`` reports it: its segments with their rows,
settled or pending by the batch metrics beside them, the totals and the records per consumer
slot and per share-group member; inspecting changes nothing, on an object store that takes no
write too, and a missing journal is named (no broker, no Spark)."""

from __future__ import annotations

import dataclasses
import json
import re
import uuid
from pathlib import Path

import obstore
import pyarrow as pa
import pytest
from helpers.messages import FakeMessage
from helpers.metrics import batch_metrics

from kafka_share_eos.errors import LocationNotFoundError
from kafka_share_eos.journal import (
    RUNNER_MEMBER,
    BatchMetrics,
    Journal,
    Segment,
    Totals,
    inspect_journal,
)
from kafka_share_eos.journal.metrics_store import METRICS_DIR
from kafka_share_eos.proving_ground.launchers.gcs_server import GcsServer
from kafka_share_eos.source.conversion import to_record_batch
from kafka_share_eos.storage import Location


def rows(count: int, first: int = 0) -> pa.RecordBatch:
    return to_record_batch([FakeMessage(o, value=b"v") for o in range(first, first + count)])


def metrics(seq: int, first_seq: int, records: int, **fields: object) -> BatchMetrics:
    return dataclasses.replace(batch_metrics(seq), first_seq=first_seq, records=records,
                               **{"acknowledged": records, **fields})


def written_journal(path: Path) -> Journal:
    """Batches 1-2 (afterJournal, two segments) and 3 settled, 4 pending, 5 in two slots
    settled, 6 a slot whose writer died after its first part."""
    journal = Journal(str(path))
    journal.write(1, rows(3))
    journal.write(2, rows(2, 3))
    journal.write(3, rows(4, 5))
    journal.write(4, rows(1, 9))
    journal.write_slot(5, 0, rows(6, 10))
    journal.write_slot(5, 1, rows(4, 16))
    journal.write_slot(6, 0, rows(2, 20), last=False)
    store = journal.metrics()
    store.write(metrics(2, 1, 5, ack_policy="afterJournal", lock_budget_used=0.5))
    store.write(metrics(3, 3, 4, redelivered=1, ack_failures=1, acknowledged=3))
    store.write(metrics(5, 5, 10, consumers=[
        {"slot": 0, "records": 6, "member": "101-a"},
        {"slot": 1, "records": 4},
    ]))
    return journal


def test_segments_are_listed_with_their_rows_settled_or_pending(tmp_path: Path) -> None:
    status = inspect_journal(written_journal(tmp_path / "j"))
    assert status.location == str(tmp_path / "j")
    assert status.segments == (
        Segment(1, 3, True), Segment(2, 2, True), Segment(3, 4, True), Segment(4, 1, False),
        Segment(5, 10, True),
    )
    assert status.pending == [4]
    assert [b.seq for b in status.batches] == [2, 3, 5]
    assert status.dead_letters is None


def test_totals_sum_the_settled_batches(tmp_path: Path) -> None:
    status = inspect_journal(written_journal(tmp_path / "j"))
    assert status.totals == Totals(batches=3, records=19, redelivered=2 + 1 + 2,
                                   acknowledged=5 + 3 + 10, ack_failures=1,
                                   max_lock_budget_used=0.5)


def test_records_are_counted_per_slot_and_per_member(tmp_path: Path) -> None:
    status = inspect_journal(written_journal(tmp_path / "j"))
    # The runner's single consumer is slot 0, and the member "runner".
    assert status.consumers == [{"slot": 0, "records": 5 + 4 + 6}, {"slot": 1, "records": 4}]
    assert status.members == {RUNNER_MEMBER: 5 + 4 + 4, "101-a": 6}


def test_the_summary_is_ready_for_json(tmp_path: Path) -> None:
    summary = inspect_journal(written_journal(tmp_path / "j")).to_dict()
    assert json.loads(json.dumps(summary)) == summary
    assert summary["journal"] == str(tmp_path / "j")
    assert (summary["journaled"], summary["acknowledged"], summary["pending"]) == (5, 3, [4])
    assert summary["segments"][3] == {"seq": 4, "rows": 1, "settled": False}
    assert summary["totals"]["records"] == 19
    assert summary["consumers"][1] == {"slot": 1, "records": 4}
    assert summary["members"]["101-a"] == 6
    assert summary["last_batch"]["seq"] == 5 and summary["last_batch"]["first_seq"] == 5
    assert summary["dead_letters"] is None


def test_a_journal_without_metrics_has_every_segment_pending_and_stays_unchanged(
    tmp_path: Path,
) -> None:
    journal = Journal(str(tmp_path / "j"))
    journal.write(1, rows(2))
    status = inspect_journal(Journal(str(tmp_path / "j")))
    assert status.pending == [1]
    assert status.totals == Totals(0, 0, 0, 0, 0, 0.0)
    assert status.consumers == [] and status.members == {}
    assert status.to_dict()["last_batch"] is None
    assert not (tmp_path / "j" / METRICS_DIR).exists()


def test_a_missing_journal_is_named_and_not_created(tmp_path: Path) -> None:
    absent = tmp_path / "absent"
    with pytest.raises(LocationNotFoundError, match=re.escape(f"no journal at '{absent}'")):
        inspect_journal(Journal(str(absent)))
    assert not absent.exists()


def test_a_journal_on_a_store_that_takes_none_of_our_writes_is_inspected_all_the_same(
    tmp_path: Path, gcs_server: GcsServer,
) -> None:
    """fake-gcs-server answers object_store's writes with 400, the conditional-write check's
    probe among them: a journal copied in through its JSON API reads as it does on a local
    disk, and inspecting it writes nothing."""
    local, prefix = tmp_path / "j", f"status-{uuid.uuid4().hex}"
    written_journal(local)
    keys = sorted(f"{prefix}/{path.relative_to(local).as_posix()}"
                  for path in local.rglob("*") if path.is_file())
    for key in keys:
        gcs_server.upload(key, (local / key.removeprefix(f"{prefix}/")).read_bytes())

    status = inspect_journal(Journal(Location(gcs_server.url(prefix),
                                              gcs_server.storage_options())))

    expected = inspect_journal(Journal(str(local)))
    assert status.segments == expected.segments and status.batches == expected.batches
    assert (status.totals, status.consumers) == (expected.totals, expected.consumers)
    held = obstore.list(gcs_server.obstore_store(), prefix).collect()
    assert sorted(meta["path"] for meta in held) == keys
