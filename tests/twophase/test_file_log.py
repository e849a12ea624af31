"""The decision log kept as one JSON file per transaction in a directory, and its pickled
copies."""

from __future__ import annotations

import uuid
from pathlib import Path

from helpers.pickled import copied

from kafka_share_eos.twophase import Decision, FileDecisionLog, Outcome, Token


def test_decision_log_round_trip_and_prefixes(tmp_path: Path) -> None:
    log = FileDecisionLog(str(tmp_path / "nested" / "log"))
    token = Token("p", "kse:app:4:abc", 2, {"gid": "kse:app:4:abc:p"})
    decision = Decision("kse:app:4:abc", 4, Outcome.COMMIT, (token,))
    log.write(decision)
    log.write(Decision("kse:app2:1:def", 1, Outcome.COMMIT, ()))

    assert log.read("kse:app:4:abc") == decision
    assert log.read("kse:app:5:abc") is None
    assert log.txids("kse:app:") == ["kse:app:4:abc"]
    log.delete("kse:app:4:abc")
    log.delete("kse:app:4:abc")
    assert log.txids("kse:app:") == []


def test_a_copy_opens_the_store_itself() -> None:
    """An object store's client (here obstore's in-memory store) cannot be pickled: a copy of
    the log keeps its location and opens the store in its own process."""
    log = FileDecisionLog(f"memory:///decisions-{uuid.uuid4().hex[:8]}")
    decision = Decision("kse:app:1:abc", 1, Outcome.COMMIT, ())
    log.write(decision)

    copy = copied(log)
    assert copy.read("kse:app:1:abc") == decision
    copy.delete("kse:app:1:abc")
    assert log.txids("kse:app:") == []
