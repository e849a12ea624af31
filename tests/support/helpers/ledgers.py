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


# An application applying batches through a checkpoint-dedup store on a shared ledger and sink,
# as a separate process: ledger, sink, app_id, then the batches as JSON; one report per line.
DEDUP_APPLICATION = """
import json, sys
from helpers.ledgers import records
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore
ledger, sink, app, batches = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
store = CheckpointDedupStore(ledger, DeltaAppendSink(sink, app_id=app + "-sink"), app_id=app)
for batch_id, coordinates in batches:
    report = store.apply(records(*[tuple(c) for c in coordinates]), batch_id)
    print(json.dumps([report.rows_written, report.already_applied]), flush=True)
"""
