"""Size and coverage of a ledger, read from the Delta log or the Iceberg manifests only (no data
files are opened)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_share_eos.errors import LocationNotFoundError
from kafka_share_eos.ledger.lookup import LedgerLookup

if TYPE_CHECKING:
    from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger


@dataclass(frozen=True, order=True)
class PartitionCoverage:
    """Identities held for one share-partition and the offset range they span."""

    topic: str
    partition: int
    rows: int
    files: int
    min_offset: int | None
    max_offset: int | None


@dataclass(frozen=True)
class LedgerStats:
    """Rows, files and bytes of a ledger, its Delta version and last recorded batch."""

    uri: str
    version: int
    last_batch: int | None
    rows: int
    files: int
    size_bytes: int
    partitions: list[PartitionCoverage] = field(default_factory=list)


def ledger_stats(ledger: LedgerLookup | IcebergLedger) -> LedgerStats:
    """Describe ``ledger``; per-partition coverage only for the record identity layout. An
    Iceberg ledger is described by :func:`kafka_share_eos.ledger.iceberg_upkeep.stats`.

    Raises:
        LocationNotFoundError: the ledger's table does not exist.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if not isinstance(ledger, LedgerLookup):
        return ledger.stats()

    table = ledger.location.table()
    if table is None:
        raise LocationNotFoundError(f"no Delta ledger table at {ledger.uri!r}")
    actions = pa.table(table.get_add_actions(flatten=True))
    rows = int(pc.sum(actions["num_records"]).as_py() or 0) if actions.num_rows else 0
    size = int(pc.sum(actions["size_bytes"]).as_py() or 0) if actions.num_rows else 0
    coverage: list[PartitionCoverage] = []
    if ledger.is_record_identity and actions.num_rows:
        has_stats = "min.offset" in actions.column_names
        aggregates = [("num_records", "sum"), ("path", "count")]
        if has_stats:
            aggregates += [("min.offset", "min"), ("max.offset", "max")]
        grouped = actions.group_by(["partition.topic", "partition.partition"]).aggregate(
            aggregates
        )
        coverage = sorted(
            PartitionCoverage(
                r["partition.topic"], int(r["partition.partition"]), int(r["num_records_sum"]),
                int(r["path_count"]), r.get("min.offset_min"), r.get("max.offset_max"),
            )
            for r in grouped.to_pylist()
        )
    return LedgerStats(
        ledger.uri, table.version(), ledger.last_batch(), rows, actions.num_rows, size, coverage
    )
