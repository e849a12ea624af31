"""The records a strategy refused, kept beside the journal for the source to REJECT: each once,
and seen by every reader (no broker, no Spark)."""

from __future__ import annotations

from pathlib import Path

from kafka_share_eos.journal.rejections import RecordRejections


def test_refusals_are_kept_once_per_record_and_seen_by_every_reader(
    tmp_path: Path,
) -> None:
    writer, reader = RecordRejections(str(tmp_path)), RecordRejections(str(tmp_path))
    assert not reader.routed() and reader.refused() == frozenset()
    assert not (tmp_path / "_rejections").exists()
    writer.route_here()
    assert writer.add(3, [("t", 0, 5), ("t", 1, 5)]) == 2
    # A replayed batch and a redelivery refused again add nothing.
    assert writer.add(3, [("t", 0, 5), ("t", 1, 5)]) == 0
    assert writer.add(7, [("t", 1, 5), ("t", 0, 9)]) == 1
    assert reader.routed()
    assert reader.decided() == {("t", 0, 5): 3, ("t", 1, 5): 3, ("t", 0, 9): 7}
