"""Batches shaped like the source's output and identity ledgers filled with them, for the tests
of the checkpoint-dedup store and of its ledger, on Delta and on Iceberg."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from helpers.batches import source_rows
from helpers.iceberg import catalog_config, open_catalog
from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger
from kafka_share_eos.ledger.identity_ledger import IdentityLedger

LEDGER_BACKENDS = ["delta", "iceberg"]
"""Where a ledger is kept, for ``@pytest.fixture(params=LEDGER_BACKENDS)``."""

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


def ledger_spec(request: pytest.FixtureRequest, tmp_path: Path, backend: str) -> str:
    """A new ledger as a string a separate process can take: a Delta table's path, or an
    Iceberg table and its SQL catalog on SQLite as JSON (see :func:`opened_ledger`)."""
    if backend == "delta":
        return str(tmp_path / "ledger")
    config = catalog_config(request, tmp_path, "sqlite")
    open_catalog(config)  # pyiceberg creates its catalog's own tables, which no race may do
    return json.dumps({"table": "db.ledger", "catalog": config})


def opened_ledger(spec: str) -> str | IcebergLedger:
    """The ``ledger=`` of a checkpoint-dedup store, from :func:`ledger_spec`'s string."""
    if not spec.startswith("{"):
        return spec
    given = json.loads(spec)
    return IcebergLedger(given["table"], catalog=given["catalog"])


def ledger_rows(spec: str, columns: Sequence[str] = ("topic", "partition", "offset")
                ) -> list[tuple]:
    """Rows of the ledger of :func:`ledger_spec`'s string, as sorted tuples, duplicates kept."""
    if not spec.startswith("{"):
        return delta_rows(spec, columns)
    given = json.loads(spec)
    table = open_catalog(given["catalog"]).load_table(given["table"]).scan().to_arrow()
    return sorted(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


# An application applying batches through a checkpoint-dedup store on a shared ledger and sink,
# as a separate process: ledger (as ledger_spec gives it), sink, app_id, then the batches as
# JSON; one report per line.
DEDUP_APPLICATION = """
import json, sys
from helpers.ledgers import opened_ledger, records
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore
ledger, sink, app, batches = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
store = CheckpointDedupStore(opened_ledger(ledger), DeltaAppendSink(sink, app_id=app + "-sink"),
                             app_id=app)
for batch_id, coordinates in batches:
    report = store.apply(records(*[tuple(c) for c in coordinates]), batch_id)
    print(json.dumps([report.rows_written, report.already_applied]), flush=True)
"""
