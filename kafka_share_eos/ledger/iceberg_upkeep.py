"""Upkeep of an Iceberg identity ledger: pruning identities that can no longer come back,
compaction of the small files every claim adds, expiry of old snapshots, and its size.

Pruning follows the ledger's :class:`~kafka_share_eos.ledger.retention.RetentionPolicy` as on
Delta, with each partition's highest offset read from the manifests' bounds (no data file
opened). Every commit here carries the watermarks forward
(:mod:`kafka_share_eos.iceberg.snapshots`) and lands only onto the snapshot it was decided on:
a claim that lands first makes it start over on the new snapshot, and a claim decided before
it fails and reads again.

pyiceberg removes expired snapshots from the table's metadata and deletes no file; compaction
then deletes the files that only the expired snapshots reached, as Delta's vacuum does.
"""

from __future__ import annotations

import datetime as dt
import warnings
from collections.abc import Mapping, Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos._libs import iceberg_expressions
from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.iceberg.snapshots import commit_record
from kafka_share_eos.iceberg.tables import without_rebase
from kafka_share_eos.ledger.compaction import DEFAULT_VACUUM_RETENTION, CompactResult
from kafka_share_eos.ledger.retention import PruneResult, RetentionPolicy, offset_cutoffs
from kafka_share_eos.ledger.rows import APPLIED_AT_COLUMN, highest_offsets
from kafka_share_eos.ledger.stats import LedgerStats, PartitionCoverage

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table
    from pyiceberg.table.snapshots import Snapshot

    from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger

# pyiceberg's predicates take their arguments positionally, which its stubs do not show.
ie: Any = iceberg_expressions

UPKEEP_APPLICATION = "kafka-share-eos/ledger-upkeep"
"""The application the upkeep's snapshots are committed under."""


def prune(
    ledger: IcebergLedger, policy: RetentionPolicy, *, now: dt.datetime | None = None
) -> PruneResult:
    """Delete the identities ``policy`` allows to go, in one commit; the watermarks stay.

    Raises:
        ConfigurationError: an offset window on a ledger of business keys.
        CommitConflictError: other writers committed first on every attempt.
    """
    table = ledger.current()
    if table is None:
        return PruneResult(0, {})
    cutoffs = offset_cutoffs(ledger, policy, lambda: _highest_offsets(table))
    rules = []
    if policy.min_age is not None:
        horizon = (now or dt.datetime.now(dt.UTC)) - policy.min_age
        rules.append(ie.LessThan(APPLIED_AT_COLUMN, horizon))
    if policy.offset_window is not None:
        if not cutoffs:
            return PruneResult(0, {})
        rules.append(reduce(ie.Or, [
            ie.And(ie.EqualTo("topic", topic), ie.EqualTo("partition", partition),
                   ie.LessThan("offset", cutoff))
            for (topic, partition), cutoff in sorted(cutoffs.items())
        ]))
    predicate: BooleanExpression = reduce(ie.And, rules)

    def attempt() -> int:
        current = ledger.current()
        assert current is not None
        before = _total_rows(current)
        transaction = without_rebase(current).transaction()
        with warnings.catch_warnings():
            # A pruning that finds nothing to drop commits nothing; pyiceberg warns of it.
            warnings.filterwarnings("ignore", "Delete operation did not match", UserWarning)
            transaction.delete(predicate, snapshot_properties=_upkeep_properties(current))
        transaction.commit_transaction()
        after = ledger.current()
        return before - (_total_rows(after) if after is not None else 0)

    return PruneResult(ledger.table.committing("pruning the ledger", attempt), cutoffs)


def compact(
    ledger: IcebergLedger,
    *,
    target_size: int | None = None,
    vacuum_retention: dt.timedelta = DEFAULT_VACUUM_RETENTION,
) -> CompactResult:
    """Rewrite the ledger's rows into one file per partition (when it holds more), then
    expire the snapshots older than ``vacuum_retention`` (the current one always stays) and
    delete the files only they reached: ``files_vacuumed`` counts those.

    The rows are read into memory whole; pruning keeps a ledger small enough for that.

    Raises:
        ConfigurationError: ``vacuum_retention`` is negative, or ``target_size`` is given
            (pyiceberg writes files of the table's ``write.target-file-size-bytes``).
        CommitConflictError: other writers committed first on every attempt.
    """
    if vacuum_retention < dt.timedelta(0):
        raise ConfigurationError(f"vacuum_retention must be >= 0, got {vacuum_retention}")
    if target_size is not None:
        raise ConfigurationError(
            "target_size is not taken by an Iceberg ledger: set the table property "
            "write.target-file-size-bytes instead")
    if ledger.current() is None:
        return CompactResult(0, 0, 0)

    def rewrite() -> tuple[int, int]:
        table = ledger.current()
        assert table is not None
        files = table.inspect.files()
        if files.num_rows <= len(set(map(str, files["partition"].to_pylist()))):
            return 0, 0
        transaction = without_rebase(table).transaction()
        transaction.overwrite(table.scan().to_arrow(),
                              snapshot_properties=_upkeep_properties(table))
        transaction.commit_transaction()
        rewritten = ledger.current()
        assert rewritten is not None
        return rewritten.inspect.files().num_rows, files.num_rows

    added, removed = ledger.table.committing("compacting the ledger", rewrite)

    def expire() -> list[Snapshot]:
        table = ledger.current()
        assert table is not None
        horizon = (dt.datetime.now(dt.UTC) - vacuum_retention).timestamp() * 1000
        # Branch and tag heads (the current snapshot among them) are never expired.
        kept = {ref.snapshot_id for ref in table.metadata.refs.values()}
        old = [s for s in table.snapshots()
               if s.timestamp_ms < horizon and s.snapshot_id not in kept]
        if old:
            table.maintenance.expire_snapshots().by_ids([s.snapshot_id for s in old]).commit()
        return old

    expired = ledger.table.committing("expiring snapshots", expire)
    return CompactResult(added, removed, _delete_unreachable(ledger, expired))


def _delete_unreachable(ledger: IcebergLedger, expired: Sequence[Snapshot]) -> int:
    """Delete the files that only the ``expired`` snapshots reached (their manifest lists,
    manifests and data files), as Delta's vacuum does; how many were deleted.

    A snapshot the table still holds keeps every file it reaches. What expired was older than
    the retention, so no claim still reads it.
    """
    table = ledger.current()
    if not expired or table is None:
        return 0
    gone = _reachable(table, expired) - _reachable(table, table.snapshots())
    deleted = 0
    for path in sorted(gone):
        try:
            table.io.delete(path)
        except FileNotFoundError:
            continue  # another compaction deleted it first
        deleted += 1
    return deleted


def _reachable(table: Table, snapshots: Sequence[Snapshot]) -> set[str]:
    """The manifest lists, manifests and data files ``snapshots`` reach (a data file a
    manifest marks deleted too: it goes with the last snapshot that lists it)."""
    found: set[str] = set()
    for snapshot in snapshots:
        found.add(snapshot.manifest_list)
        for manifest in snapshot.manifests(table.io):
            if manifest.manifest_path not in found:
                found.add(manifest.manifest_path)
                found.update(entry.data_file.file_path for entry in
                             manifest.fetch_manifest_entry(table.io, discard_deleted=False))
    return found


def stats(ledger: IcebergLedger) -> LedgerStats:
    """Rows, files and bytes of the ledger, from its manifests only; ``version`` is the current
    snapshot's sequence number.

    Raises:
        LocationNotFoundError: the ledger's table does not exist.
    """
    table = ledger.current()
    if table is None:
        raise LocationNotFoundError(f"no Iceberg ledger table {ledger.uri!r}")
    files = table.inspect.files()
    snapshot = table.current_snapshot()
    coverage: list[PartitionCoverage] = []
    if ledger.is_record_identity and files.num_rows:
        grouped: dict[tuple[str, int], list[dict[str, Any]]] = {}
        for row in _file_offsets(files).to_pylist():
            grouped.setdefault((row["topic"], row["partition"]), []).append(row)
        coverage = sorted(
            PartitionCoverage(topic, partition, sum(r["rows"] for r in rows), len(rows),
                              min(r["low"] for r in rows), max(r["offset"] for r in rows))
            for (topic, partition), rows in grouped.items()
        )
    return LedgerStats(
        ledger.uri, 0 if snapshot is None else snapshot.sequence_number or 0, ledger.last_batch(),
        _total_rows(table), files.num_rows, sum(files["file_size_in_bytes"].to_pylist()),
        coverage,
    )


def _file_offsets(files: pa.Table) -> pa.Table:
    """Per data file: its partition, rows, and lowest and highest offset."""
    partition = files["partition"].combine_chunks()
    offsets = files["readable_metrics"].combine_chunks().field("offset")
    return pa.table({
        "topic": partition.field("topic"), "partition": partition.field("partition"),
        "rows": files["record_count"], "low": offsets.field("lower_bound"),
        "offset": offsets.field("upper_bound"),
    })


def _highest_offsets(table: Table) -> Mapping[tuple[str, int], int]:
    """The highest offset of each partition of the ledger, from its files' bounds."""
    files = table.inspect.files()
    return {} if files.num_rows == 0 else highest_offsets(_file_offsets(files))


def _total_rows(table: Table) -> int:
    snapshot = table.current_snapshot()
    summary = None if snapshot is None else snapshot.summary
    return 0 if summary is None else int(summary["total-records"] or 0)


def _upkeep_properties(table: Table) -> dict[str, str]:
    """The properties of an upkeep commit: every application's watermark carried forward."""
    record = commit_record(table)
    return record.properties(UPKEEP_APPLICATION, record.committed(UPKEEP_APPLICATION) or 0,
                             None)
