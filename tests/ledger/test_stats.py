"""A ledger's size and coverage from its Delta log: rows, files, bytes, version and last batch,
and per share-partition the identities held and the offsets they span (real Delta tables)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.ledgers import filled_ledger, partition_run

from kafka_share_eos.errors import LocationNotFoundError
from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.ledger.lookup import LedgerLookup
from kafka_share_eos.ledger.stats import LedgerStats, PartitionCoverage, ledger_stats

pytestmark = pytest.mark.timeout(120)


def data_bytes(root: Path) -> int:
    return sum(path.stat().st_size for path in root.rglob("*.parquet"))


def last_commit(root: Path) -> int:
    return max(int(path.stem) for path in (root / "_delta_log").glob("*.json"))


def test_a_record_ledger_is_described_per_share_partition(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger", batches=3, size=10)
    ledger.claim(partition_run("u", 4, 500, 502), 3)
    stats = ledger_stats(ledger)
    assert (stats.uri, stats.last_batch, stats.rows) == (ledger.uri, 3, 3 * 2 * 10 + 2)
    # One file a batch per partition it touched.
    assert stats.files == 3 * 2 + 1 == len(list((tmp_path / "ledger").rglob("*.parquet")))
    assert stats.version == last_commit(tmp_path / "ledger") >= 4
    assert stats.size_bytes == data_bytes(tmp_path / "ledger")
    assert stats.partitions == [
        PartitionCoverage("t", 0, rows=30, files=3, min_offset=0, max_offset=29),
        PartitionCoverage("t", 1, rows=30, files=3, min_offset=0, max_offset=29),
        PartitionCoverage("u", 4, rows=2, files=1, min_offset=500, max_offset=501),
    ]


def test_stats_are_read_through_any_lookup_of_the_ledger(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger", batches=1)
    other_app = LedgerLookup(ledger.uri, app_id="another-app")
    stats = ledger_stats(other_app)
    assert stats.rows == 20 and stats.last_batch is None
    assert [p.rows for p in stats.partitions] == [10, 10]


def test_a_business_key_ledger_has_no_partition_coverage(tmp_path: Path) -> None:
    ledger = IdentityLedger(str(tmp_path / "ledger"), identity=["order_id"])
    ledger.claim(pa.table({"order_id": [1, 2, 3]}), 0)
    ledger.claim(pa.table({"order_id": [4]}), 1)
    stats = ledger_stats(ledger)
    assert stats == LedgerStats(ledger.uri, last_commit(tmp_path / "ledger"), 1, rows=4,
                                files=2, size_bytes=data_bytes(tmp_path / "ledger"),
                                partitions=[])


def test_a_missing_ledger_is_named(tmp_path: Path) -> None:
    absent = str(tmp_path / "absent")
    with pytest.raises(LocationNotFoundError,
                       match=re.escape(f"no Delta ledger table at '{absent}'")):
        ledger_stats(LedgerLookup(absent))
    assert not os.path.exists(absent)
