"""The journal's figures as the exporter reads them: settled batches from the metrics files
(read once each), slots and members of executor consumers, and segments still pending."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa
from helpers.metrics import batch_metrics

from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.metrics_store import MetricsStore
from kafka_share_eos.monitoring.journal_figures import JournalFigures
from kafka_share_eos.storage import Location

SEGMENT = pa.record_batch({"offset": pa.array([1, 2], pa.int64())})


def test_a_journal_not_created_yet_reads_as_nothing_and_is_not_created(tmp_path: Path) -> None:
    figures = JournalFigures(Location(str(tmp_path / "journal")))
    figures.refresh()
    assert figures.totals.records == 0 and figures.totals.lock_budget_margin is None
    assert not (tmp_path / "journal").exists()


def test_settled_batches_are_summed_once_and_unsettled_segments_are_pending(
    tmp_path: Path,
) -> None:
    journal_path = str(tmp_path / "journal")
    journal, store = Journal(journal_path), MetricsStore(journal_path)
    for seq in (1, 2, 3):
        journal.write(seq, SEGMENT)
    store.write(batch_metrics(1))
    figures = JournalFigures(Location(journal_path))
    figures.refresh()
    figures.refresh()
    assert (figures.totals.batches, figures.totals.records, figures.totals.redelivered) == (
        1, 10, 2)
    assert figures.totals.pending_segments == 2
    assert figures.totals.slots == figures.totals.members == 1

    slots = [{"slot": 0, "records": 4, "member": "lease-a"},
             {"slot": 1, "records": 6, "member": "lease-b"}]
    store.write(dataclasses.replace(batch_metrics(3), first_seq=2, lock_budget_used=0.25,
                                    consumers=slots))
    figures.refresh()
    assert (figures.totals.batches, figures.totals.records) == (2, 20)
    assert figures.totals.pending_segments == 0
    assert figures.totals.lock_budget_margin == 0.75
    assert figures.totals.slot_records == {"0": 14, "1": 6}
    assert (figures.totals.slots, figures.totals.members) == (2, 2)
    assert figures.totals.lock_held.observations == 2
