"""Segments counted before their batch is acknowledged: each read once, a consumer's chain only
once complete, a damaged file counted as nothing, and what was counted handed back when the
batch's metrics file is read."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from helpers.journal_rows import journaled

from kafka_share_eos.journal import Journal
from kafka_share_eos.monitoring.unacknowledged import UnacknowledgedSegments


def test_each_segment_is_counted_once_and_handed_back_when_its_batch_is_read(
    tmp_path: Path,
) -> None:
    journal = Journal(str(tmp_path / "journal"))
    segments = UnacknowledgedSegments(journal)
    journal.write(1, journaled(0, range(5), delivery=3))
    journal.write(2, journaled(1, range(40, 42)))
    first = segments.count_new(journal.entries(), settled=lambda seq: seq == 2)
    assert (dict(first.records), first.redelivered, first.last_offsets) == (
        {("orders", 0): 5}, 5, {("orders", 0): 4})
    # Read again: nothing new.
    again = segments.count_new(journal.entries(), settled=lambda seq: seq == 2)
    assert (dict(again.records), again.redelivered) == ({}, 0)
    taken = segments.settle(1, 1)
    assert dict(taken.records) == {("orders", 0): 5}
    assert dict(segments.settle(1, 1).records) == {}


def test_a_consumers_chain_counts_once_complete(tmp_path: Path) -> None:
    journal = Journal(str(tmp_path / "journal"))
    segments = UnacknowledgedSegments(journal)
    journal.write_slot(3, 0, journaled(2, range(10, 13)), part=0, last=False)
    assert dict(segments.count_new(journal.entries(), lambda _: False).records) == {}
    journal.write_slot(3, 0, journaled(2, range(13, 15)), part=1)
    journal.write_slot(3, 1, journaled(0, range(0, 1)))
    found = segments.count_new(journal.entries(), lambda _: False)
    assert dict(found.records) == {("orders", 2): 5, ("orders", 0): 1}
    assert found.last_offsets == {("orders", 2): 14, ("orders", 0): 0}
    assert dict(segments.settle(3, 3).records) == {("orders", 2): 5, ("orders", 0): 1}


def test_a_damaged_segment_counts_as_nothing_and_is_not_read_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    journal = Journal(str(tmp_path / "journal"))
    segments = UnacknowledgedSegments(journal)
    journal.write(1, journaled(0, range(3)))
    path = tmp_path / "journal" / f"{1:020d}.arrow"
    path.write_bytes(path.read_bytes()[:40])
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.monitoring"):
        found = segments.count_new(journal.entries(), lambda _: False)
    assert dict(found.records) == {} and "segment 1" in caplog.text
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos.monitoring"):
        segments.count_new(journal.entries(), lambda _: False)
    assert caplog.text == ""
