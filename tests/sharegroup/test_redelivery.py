"""The redelivery window is the one bound both forgetters use: the identity ledger's default
retention prunes offsets more than the window below a partition's highest, and the Kafka topic
sink's progress markers drop ranges ending more than the window below it, keeping the rest
(a real Delta ledger; markers in memory)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from helpers.ledgers import delta_rows, records

from kafka_share_eos.ledger import IdentityLedger, RetentionPolicy, prune
from kafka_share_eos.sharegroup.redelivery import REDELIVERY_WINDOW
from kafka_share_eos.sinks.kafka_progress import CommittedRecords, Marker

# Kafka's defaults: group.share.partition.max.record.locks, and the records of one fetch.
KAFKA_RECORD_LOCKS, ONE_FETCH = 2000, 500
TOP = 3 * REDELIVERY_WINDOW


def test_the_window_leaves_room_above_kafkas_defaults() -> None:
    assert REDELIVERY_WINDOW >= KAFKA_RECORD_LOCKS + ONE_FETCH


def test_retention_keeps_the_window_by_default() -> None:
    assert RetentionPolicy().offset_window == REDELIVERY_WINDOW


def test_the_ledger_prunes_identities_below_the_window_only(tmp_path: Path) -> None:
    ledger = IdentityLedger(str(tmp_path / "ledger"))
    below, edge = TOP - REDELIVERY_WINDOW - 1, TOP - REDELIVERY_WINDOW
    ledger.claim(records(("t", 0, 5), ("t", 0, below), ("t", 0, edge), ("t", 0, TOP),
                         ("t", 1, 5)), 0)
    pruned = prune(ledger, RetentionPolicy(min_age=None))
    assert pruned.deleted_rows == 2
    assert pruned.cutoffs == {("t", 0): edge}
    # Partition 1's highest offset is within the window of its start: nothing of it goes.
    assert delta_rows(ledger.uri) == [("t", 0, edge), ("t", 0, TOP), ("t", 1, 5)]


def test_the_default_retention_also_waits_an_hour(tmp_path: Path) -> None:
    ledger = IdentityLedger(str(tmp_path / "ledger"))
    ledger.claim(records(("t", 0, 5), ("t", 0, TOP)), 0)
    assert prune(ledger, RetentionPolicy()).deleted_rows == 0
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=2)
    assert prune(ledger, RetentionPolicy(), now=later).deleted_rows == 1
    assert delta_rows(ledger.uri) == [("t", 0, TOP)]


def test_progress_markers_drop_ranges_ending_below_the_window() -> None:
    committed = CommittedRecords().with_offsets({
        ("t", 0): [0, 1, 2, TOP - REDELIVERY_WINDOW - 2, TOP - REDELIVERY_WINDOW, TOP],
        ("t", 1): [0, 1, REDELIVERY_WINDOW],
    })
    assert committed.ranges == {
        ("t", 0): [[TOP - REDELIVERY_WINDOW, TOP - REDELIVERY_WINDOW], [TOP, TOP]],
        ("t", 1): [[0, 1], [REDELIVERY_WINDOW, REDELIVERY_WINDOW]],
    }
    assert ("t", 0, 2) not in committed and ("t", 0, TOP - REDELIVERY_WINDOW - 2) not in committed
    assert ("t", 0, TOP - REDELIVERY_WINDOW) in committed


def test_a_marker_forgets_what_the_next_batch_lifts_out_of_the_window() -> None:
    first = Marker.of({("t", 0): [10, 11, 12]}, 0, None)
    assert first.committed.ranges == {("t", 0): [[10, 12]]}
    near = Marker.of({("t", 0): [12 + REDELIVERY_WINDOW]}, 1, first)
    assert ("t", 0, 10) in near.committed
    far = Marker.of({("t", 0): [13 + REDELIVERY_WINDOW]}, 2, near)
    assert far.committed.ranges == {("t", 0): [[12 + REDELIVERY_WINDOW, 13 + REDELIVERY_WINDOW]]}
    assert ("t", 0, 12) not in far.committed
