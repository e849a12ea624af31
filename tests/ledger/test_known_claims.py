"""What this process knows a ledger holds: claims that skip reading the ledger, on real Delta
tables, and a pickled copy that knows nothing of it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ledgers import delta_rows, partition_run
from helpers.pickled import copied

from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.ledger.known_claims import KnownClaims
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore

pytestmark = pytest.mark.timeout(120)


def test_claims_read_the_ledger_only_when_this_process_cannot_know_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New offsets and redeliveries of the last batch claim without a read; another writer's
    claims made meanwhile are read, and never applied twice."""
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    a = CheckpointDedupStore(ledger, DeltaAppendSink(sink, app_id="a"), app_id="a")
    b = CheckpointDedupStore(ledger, DeltaAppendSink(sink, app_id="b"), app_id="b")
    reads: list[str | None] = []
    read = IdentityLedger.read

    def counted(self: IdentityLedger, *args: object, **kwargs: object) -> object:
        reads.append(self.app_id)
        return read(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(IdentityLedger, "read", counted)
    a.apply(partition_run("t", 0, 0, 10), 0)
    second = a.apply(partition_run("t", 0, 5, 15), 1)
    assert reads == []  # the ledger's log told the first batch; the second knew it
    assert (second.rows_written, second.already_applied) == (5, 5)

    b.apply(partition_run("t", 0, 15, 20), 0)
    reads.clear()
    third = a.apply(partition_run("t", 0, 15, 25), 2)
    # a's commit on its own last snapshot failed on b's claim; the retry read the ledger.
    assert reads == ["a"]
    assert (third.rows_written, third.already_applied) == (5, 5)
    assert delta_rows(sink) == [("t", 0, o) for o in range(25)]


def test_a_pickled_copy_knows_nothing_and_learns_the_ledger_anew(tmp_path: Path) -> None:
    """What one process knows of its own claims is not the copy's to believe (a Spark Connect
    server's copy, while the original may claim on): the copy learns it from the ledger."""
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    store = CheckpointDedupStore(ledger, DeltaAppendSink(sink, app_id="a"), app_id="a")
    store.apply(partition_run("t", 0, 0, 10), 0)

    copy = copied(store)
    assert copy.ledger.known_claims() == KnownClaims()
    again = copy.apply(partition_run("t", 0, 5, 15), 1)

    assert (again.rows_written, again.already_applied) == (5, 5)
    assert delta_rows(sink) == [("t", 0, o) for o in range(15)]
