"""Batches shaped like the source's output and identity ledgers filled with them, for the tests
of the checkpoint-dedup store and of its ledger."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable

from helpers.batches import source_rows
from kafka_share_eos.ledger.identity_ledger import IdentityLedger

NO_AGE = dt.timedelta(0)


def records(*coordinates: tuple[str, int, int]) -> pa.Table:
    """A batch shaped like the source's output: Kafka coordinates plus a value."""
    return source_rows(
        topic=[c[0] for c in coordinates],
        partition=[c[1] for c in coordinates],
        offset=[c[2] for c in coordinates],
        value=pa.array([f"{c[0]}/{c[1]}/{c[2]}" for c in coordinates], pa.string()),
    )


def delta_rows(uri: str, columns: Sequence[str] = ("topic", "partition", "offset")) -> list[tuple]:
    """Rows of a Delta table as sorted tuples (duplicates kept, so a double write shows)."""
    table = pa.table(DeltaTable(uri).scan(columns=list(columns)))
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def partition_run(topic: str, partition: int, start: int, stop: int) -> pa.Table:
    return records(*[(topic, partition, o) for o in range(start, stop)])


def filled_ledger(path: Path, batches: int = 4, size: int = 10) -> IdentityLedger:
    """Batch ``b`` holds offsets [b*size, (b+1)*size) of partitions 0 and 1 of topic ``t``."""
    ledger = IdentityLedger(str(path))
    for b in range(batches):
        both = pa.concat_tables(
            [partition_run("t", p, b * size, (b + 1) * size) for p in (0, 1)]
        )
        assert ledger.claim(both, b).claimed_now == both.num_rows
    return ledger
