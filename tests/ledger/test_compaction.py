"""Compaction of a ledger's small files, on real Delta tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ledgers import NO_AGE, delta_rows, filled_ledger, records

from kafka_share_eos.ledger.compaction import compact
from kafka_share_eos.ledger.identity_ledger import IdentityLedger

pytestmark = pytest.mark.timeout(120)


def test_compaction_keeps_every_identity_and_the_batch_marker(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger", batches=6)
    before = delta_rows(ledger.uri)

    result = compact(ledger, vacuum_retention=NO_AGE)

    assert (result.files_removed, result.files_added) == (12, 2)
    assert result.files_vacuumed == 12
    assert delta_rows(ledger.uri) == before
    assert ledger.last_batch() == 5
    fresh = IdentityLedger(ledger.uri).new_rows(records(("t", 0, 59), ("t", 0, 60)))
    assert fresh.column("offset").to_pylist() == [60]
