"""Compaction of a ledger's small files: every micro-batch adds one file per share-partition."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.ledger.lookup import LedgerLookup

# Files replaced by compaction stay readable this long, so a lookup that started on the previous
# snapshot (in this or another process) does not find its files gone.
DEFAULT_VACUUM_RETENTION = dt.timedelta(hours=1)


@dataclass(frozen=True)
class CompactResult:
    """Files rewritten by compaction and files physically removed by vacuum."""

    files_added: int
    files_removed: int
    files_vacuumed: int


def compact(
    ledger: LedgerLookup,
    *,
    target_size: int | None = None,
    vacuum_retention: dt.timedelta = DEFAULT_VACUUM_RETENTION,
) -> CompactResult:
    """Bin-pack small files (per partition), then delete unreferenced files older than retention.

    Compaction rewrites rows without changing them, and the application transaction survives in
    the log, so a compacted ledger answers every lookup exactly as before.
    """
    table = ledger.location.table()
    if table is None:
        return CompactResult(0, 0, 0)
    if vacuum_retention < dt.timedelta(0):
        raise ConfigurationError(f"vacuum_retention must be >= 0, got {vacuum_retention}")
    metrics = table.optimize.compact(target_size=target_size)
    vacuumed = table.vacuum(
        # delta-rs counts whole hours; round up so nothing younger than asked is removed
        retention_hours=math.ceil(vacuum_retention.total_seconds() / 3600),
        dry_run=False,
        enforce_retention_duration=False,
    )
    table.cleanup_metadata()
    return CompactResult(
        int(metrics.get("numFilesAdded", 0)),
        int(metrics.get("numFilesRemoved", 0)),
        len(vacuumed),
    )
