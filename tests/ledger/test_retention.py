"""Pruning ledger identities that can no longer come back, on real Delta tables."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.ledgers import NO_AGE, delta_rows, filled_ledger, partition_run

from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.ledger.retention import RetentionPolicy, prune

pytestmark = pytest.mark.timeout(120)


def test_prune_keeps_the_offset_window_of_each_partition(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger")
    ledger.claim(partition_run("t", 1, 40, 60), 4)  # partition 1 runs ahead: max 59, p0 max 39

    result = prune(ledger, RetentionPolicy(offset_window=15, min_age=NO_AGE))

    assert result.cutoffs == {("t", 0): 24, ("t", 1): 44}
    kept = delta_rows(ledger.uri)
    assert kept == [("t", 0, o) for o in range(24, 40)] + [("t", 1, o) for o in range(44, 60)]
    assert result.deleted_rows == 24 + 44
    assert ledger.last_batch() == 4


def test_prune_waits_for_the_age_guard(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger")
    policy = RetentionPolicy(offset_window=15, min_age=dt.timedelta(minutes=10))

    assert prune(ledger, policy).deleted_rows == 0
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=11)
    assert prune(ledger, policy, now=later).deleted_rows == 2 * 24


def test_business_key_ledgers_prune_by_age_only(tmp_path: Path) -> None:
    ledger = IdentityLedger(str(tmp_path / "ledger"), identity=["order_id"])
    ledger.claim(pa.table({"order_id": ["a", "b"]}), 0)
    with pytest.raises(ValueError, match="offset_window=None"):
        prune(ledger, RetentionPolicy(min_age=NO_AGE))
    later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
    result = prune(ledger, RetentionPolicy(offset_window=None, min_age=NO_AGE), now=later)
    assert result.deleted_rows == 2
    with pytest.raises(ValueError, match="prunes all"):
        RetentionPolicy(offset_window=None, min_age=None)
