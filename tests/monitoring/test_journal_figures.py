"""The journal's figures as the exporter reads them: records counted per partition as soon as
their segment is journaled, and not again when their batch's metrics file comes; acknowledged
batches from the metrics files (read once each), consumers and members, segments pending."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from helpers.journal_rows import journaled
from helpers.metrics import batch_metrics

from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.metrics_store import MetricsStore
from kafka_share_eos.monitoring.journal_figures import JournalFigures
from kafka_share_eos.storage import Location


def settled(seq: int, first_seq: int, **partitions: tuple[int, int]) -> object:
    """The metrics file of batch ``first_seq..seq``: ``p<n>=(records, last offset)``."""
    entries = [{"topic": "orders", "partition": int(name[1:]), "records": records,
                "last_offset": last} for name, (records, last) in partitions.items()]
    return dataclasses.replace(batch_metrics(seq), first_seq=first_seq,
                               records=sum(records for records, _ in partitions.values()),
                               redelivered=0, partitions=entries)


def test_a_journal_not_created_yet_reads_as_nothing_and_is_not_created(tmp_path: Path) -> None:
    figures = JournalFigures(Location(str(tmp_path / "journal")))
    figures.refresh()
    assert figures.totals.records == {} and figures.totals.lock_budget_margin is None
    assert not (tmp_path / "journal").exists()


def test_records_count_when_journaled_and_once_when_their_batch_is_acknowledged(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "journal")
    journal, store = Journal(path), MetricsStore(path)
    figures = JournalFigures(Location(path))
    journal.write(1, journaled(0, range(0, 4)))
    journal.write(2, journaled(3, range(10, 13), delivery=2))
    figures.refresh()
    figures.refresh()
    # Counted at once, before the metrics file of their batch exists.
    assert figures.totals.records == {("orders", 0): 4, ("orders", 3): 3}
    assert figures.totals.redelivered == 3
    assert figures.totals.last_offsets == {("orders", 0): 3, ("orders", 3): 12}
    assert figures.totals.batches == 0 and figures.totals.pending_segments == 2

    # The batch of segment 1 is acknowledged and purged; segment 2's stays pending.
    store.write(settled(1, 1, p0=(4, 3)))
    journal.purge(1)
    figures.refresh()
    assert figures.totals.records == {("orders", 0): 4, ("orders", 3): 3}
    assert figures.totals.batches == 1 and figures.totals.pending_segments == 1

    # A batch journaled and acknowledged between two scrapes comes from its file alone.
    store.write(dataclasses.replace(settled(2, 2, p3=(3, 12)), redelivered=3))
    journal.write(3, journaled(0, range(4, 9)))
    store.write(settled(3, 3, p0=(5, 8)))
    journal.purge(3)
    figures.refresh()
    assert figures.totals.records == {("orders", 0): 9, ("orders", 3): 3}
    assert figures.totals.redelivered == 3
    assert figures.totals.last_offsets == {("orders", 0): 8, ("orders", 3): 12}
    assert (figures.totals.batches, figures.totals.pending_segments) == (3, 0)


def test_acknowledged_batches_are_summed_once_with_their_consumers(tmp_path: Path) -> None:
    journal_path = str(tmp_path / "journal")
    journal, store = Journal(journal_path), MetricsStore(journal_path)
    for seq in (1, 2, 3):
        journal.write(seq, journaled(1, range(seq * 10, seq * 10 + 2)))
    store.write(settled(1, 1, p1=(2, 11)))
    figures = JournalFigures(Location(journal_path))
    figures.refresh()
    figures.refresh()
    assert (figures.totals.batches, figures.totals.records) == (1, {("orders", 1): 6})
    assert figures.totals.pending_segments == 2
    assert figures.totals.slots == figures.totals.members == 1

    slots = [{"slot": 0, "records": 4, "member": "lease-a"},
             {"slot": 1, "records": 6, "member": "lease-b"}]
    store.write(dataclasses.replace(settled(3, 2, p1=(4, 31)), lock_budget_used=0.25,
                                    consumers=slots))
    figures.refresh()
    assert (figures.totals.batches, figures.totals.records) == (2, {("orders", 1): 6})
    assert figures.totals.pending_segments == 0
    assert figures.totals.lock_budget_margin == 0.75
    assert figures.totals.slot_records == {"0": 6, "1": 6}
    assert (figures.totals.slots, figures.totals.members) == (2, 2)
    assert figures.totals.lock_held.observations == 2


def test_a_metrics_file_of_an_earlier_release_counts_its_records_without_a_partition(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "journal")
    MetricsStore(path).write(batch_metrics(1))
    figures = JournalFigures(Location(path))
    figures.refresh()
    assert figures.totals.records == {("", -1): 10}
    assert figures.totals.last_offsets == {}
