"""What a Kafka topic sink's progress topic remembers of committed source records: ranges per
share-partition, forgetting what cannot come back."""

from __future__ import annotations

from kafka_share_eos.sinks.kafka_progress import REDELIVERY_WINDOW, CommittedRecords


def test_committed_records_merge_into_ranges_and_forget_what_cannot_come_back() -> None:
    committed = CommittedRecords().with_offsets({("in", 0): [*range(10), 12]})
    assert committed.ranges == {("in", 0): [[0, 9], [12, 12]]}
    assert ("in", 0, 5) in committed and ("in", 0, 11) not in committed
    assert ("in", 1, 5) not in committed
    window = REDELIVERY_WINDOW
    assert not committed.may_hold({("in", 0): [13, 14], ("in", 1): [0]})
    assert committed.may_hold({("in", 0): [11, 14]})
    later = committed.with_offsets({("in", 0): [11, window + 5]})
    assert later.ranges == {("in", 0): [[0, 9], [11, 12], [window + 5, window + 5]]}
    beyond = later.with_offsets({("in", 0): [window + 13]})  # 0-12 cannot come back now
    assert beyond.ranges == {("in", 0): [[window + 5, window + 5], [window + 13, window + 13]]}
    assert CommittedRecords.from_json(beyond.to_json()) == beyond
