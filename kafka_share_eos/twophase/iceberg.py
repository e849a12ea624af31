"""An Iceberg participant: data files written at prepare, committed in a snapshot only at commit.

Prepare anti-joins the batch with the keys the table holds (only the files whose statistics can
match) on its current snapshot and writes the new records as Parquet files in the table's
location that no snapshot lists, with a manifest naming them (the Delta participant's
:class:`~kafka_share_eos.twophase.delta_staging.StagingArea`): durable, invisible to readers.
The token, which the decision log keeps, holds the manifest too.

Commit adds the staged files in one snapshot carrying the toolkit's properties
(:mod:`kafka_share_eos.iceberg.snapshots`): the application, the transaction id, and as batch
the application's commit number, ``1 +`` its watermark at prepare (Spark's batch ids restart at
0 with a new checkpoint; a two-phase ``app_id`` outlives checkpoints). The snapshot lands only
onto the snapshot it was decided on; when another writer committed since, the staged records
whose keys the table now holds are left out (the rest staged anew) and the commit tried again.
A commit repeated after its answer was lost, or run again by recovery, finds its snapshot by
the transaction id, or, once that snapshot expired, its files among the table's: it is a
no-op. A watermark at the commit number without either means a second application uses the
same ``app_id``: the rows are committed under the next number and
:class:`~kafka_share_eos.errors.AppIdConflictError` raised.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos._process_local import ProcessLocal
from kafka_share_eos.errors import AppIdConflictError, TargetTableError, TwoPhaseCommitError
from kafka_share_eos.iceberg.snapshots import commit_marked, commit_record, transaction_snapshot
from kafka_share_eos.iceberg.tables import as_table_types, load_table, without_rebase
from kafka_share_eos.sinks.dedup import contained
from kafka_share_eos.sinks.iceberg_keys import stored_keys
from kafka_share_eos.sinks.iceberg_target import IcebergTarget
from kafka_share_eos.storage import open_location
from kafka_share_eos.twophase.delta_staging import StagingArea
from kafka_share_eos.twophase.protocol import Token, Transaction, check_name

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

_COMMIT = "commit"
"""The manifest's staged files the next commit attempt adds (earlier ones were left out)."""


@dataclass(frozen=True)
class _Committed:
    """What the commit of one token added to the table."""

    files: frozenset[str]
    rows: int
    number_taken: bool = False


def _absent(table: Table, rows: pa.Table, keys: list[str]) -> pa.Table:
    """The rows whose keys ``table`` does not hold."""
    selected = rows.select(keys)
    held = contained(selected, stored_keys(table, selected, keys))
    return rows.filter(pa.array([not h for h in held], pa.bool_()))


def _without_field_id(field: pa.Field) -> pa.Field:
    """``field`` without metadata, nor any field nested in it."""
    kind = field.type
    if pa.types.is_struct(kind):
        kind = pa.struct([_without_field_id(kind.field(i)) for i in range(kind.num_fields)])
    elif pa.types.is_large_list(kind):
        kind = pa.large_list(_without_field_id(kind.value_field))
    elif pa.types.is_list(kind):
        kind = pa.list_(_without_field_id(kind.value_field))
    elif pa.types.is_map(kind):
        kind = pa.map_(_without_field_id(kind.key_field), _without_field_id(kind.item_field))
    return field.with_type(kind).remove_metadata()


class IcebergParticipant(ProcessLocal):
    """Appends the batch's new records to an Iceberg table, atomically with the other
    participants of a :class:`~kafka_share_eos.twophase.TransactionCoordinator`.

    A pickled copy keeps the configuration and builds its catalog in its own process.

    Args:
        table: the table's identifier in the catalog (``"db.payments"``).
        catalog: a pyiceberg ``Catalog`` or its configuration dict (see
            :class:`~kafka_share_eos.iceberg.catalogs.IcebergCatalog`).
        name: participant name, unique within a coordinator.
        create_table: create the table from the first batch's schema when the catalog has
            none; without it a missing table is refused.
        max_commit_attempts: how often a commit reads the table again and retries when other
            writers' commits land first.

    Raises:
        MissingExtraError: pyiceberg is not installed.
        ConfigurationError: ``name`` has characters other than letters, digits, ``_`` and ``-``.
        SinkConfigurationError: an identifier without a namespace, or a ``catalog`` of another
            kind.
    """

    _PROCESS_LOCAL = ProcessLocal.attributes(_staging_areas=dict)

    def __init__(self, table: str, *, catalog: Catalog | Mapping[str, Any],
                 name: str = "iceberg", create_table: bool = True,
                 max_commit_attempts: int = 8) -> None:
        self._name = check_name("name", name)
        self._table = IcebergTarget(table, catalog, create_table=create_table,
                                    what="IcebergParticipant",
                                    max_commit_attempts=max_commit_attempts,
                                    retry_backoff_seconds=0.05)
        self._staging_areas: dict[str, StagingArea] = {}

    @property
    def name(self) -> str:
        """Participant name."""
        return self._name

    @property
    def target(self) -> str:
        """The table as ``iceberg:<catalog>.<table>``."""
        return self._table.target

    def check_target(self) -> None:
        """Check, before any record is read, that the table is there (or will be created)
        and can take the commits.

        Raises:
            TargetTableError: the table is missing without ``create_table``, or cannot be
                written (equality deletes, format version above 2).
        """
        self._table.check_target()

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        """Write the records whose keys the table does not hold as files no snapshot lists.

        Raises:
            TargetTableError: the table has other columns than the batch.
            SinkConfigurationError: a column does not cast to the table's type for it.
        """
        with self._table.catalog_errors(f"preparing {txn.txid}"):
            table = self._table.opened(rows.schema)
        names = table.schema().as_arrow().names
        if set(names) != set(rows.column_names):
            raise TargetTableError(
                f"{self.target} (participant {self._name!r}) has columns {names}, the batch "
                f"has {rows.column_names}: select the table's columns before the coordinator, "
                "or write to a new table"
            )
        rows = as_table_types(rows.select(names), table, self.target)
        new_rows = _absent(table, rows, list(txn.key_columns))
        if new_rows.num_rows == 0:
            return Token(self._name, txn.txid, 0, {"files": []})
        committed = commit_record(table).committed(txn.app_id)
        snapshot = table.current_snapshot()
        manifest: dict[str, Any] = {
            "participant": self._name,
            "app_id": txn.app_id,
            "number": 0 if committed is None else committed + 1,
            "snapshot": None if snapshot is None else snapshot.snapshot_id,
            "location": table.location(),
            "keys": list(txn.key_columns),
        }
        manifest[_COMMIT] = [self._stage(txn.txid, manifest, new_rows)]
        self._staging(manifest).write(txn.txid, manifest)
        faults.maybe_crash(faults.TWO_PHASE_DELTA_AFTER_STAGE)
        return Token(self._name, txn.txid, new_rows.num_rows, manifest)

    def commit(self, token: Token) -> int:
        """Add the staged records whose keys the table does not hold yet, in one snapshot.

        Returns the staged rows left out because another application committed their keys
        after this prepare.

        Raises:
            CommitConflictError: other writers' commits landed first on every attempt; the
                commit decision stays, so the next recovery pass commits the rows.
            AppIdConflictError: another transaction committed under this ``app_id`` and commit
                number; this commit's rows were committed under the next number.
            TwoPhaseCommitError: the table, or the staged files, are gone although nothing
                committed them.
        """
        if not token.data.get("files"):
            return 0
        done = self._table.committing(f"committing {token.txid}",
                                      lambda: self._commit_once(token))
        self._staging(token.data).discard(token.txid, keep=done.files)
        if done.number_taken:
            app_id = token.data["app_id"]
            raise AppIdConflictError(
                f"{self.target} (participant {self._name!r}) holds commit "
                f"{token.data['number']} of app_id {app_id!r} from another transaction than "
                f"{token.txid}: two applications use app_id {app_id!r} on this table. This "
                "batch's rows were committed under the next number; give each application its "
                "own app_id"
            )
        return max(token.rows_written - done.rows, 0)

    def abort(self, token: Token) -> None:
        """Delete the staged files and their manifest; a no-op once the transaction is finished."""
        if token.data.get("files"):
            self._staging(token.data).discard(token.txid)

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys`` (the key columns), whether a committed batch wrote it."""
        table = load_table(self._table.catalog.catalog(), self._table.identifier)
        if table is None:
            return [False] * keys.num_rows
        return contained(keys, stored_keys(table, keys, keys.column_names))

    def recover(self, prefix: str) -> list[Token]:
        """Tokens of this participant's manifests still staged under ``prefix``."""
        return [Token(self._name, txid, 0, manifest)
                for txid, manifest in self.staged(prefix)
                if manifest.get("participant") == self._name]

    def staged(self, prefix: str) -> list[tuple[str, dict[str, Any]]]:
        """``(txid, manifest)`` of every transaction under ``prefix`` with files staged in the
        table, whichever participant staged them."""
        with self._table.catalog_errors("listing staged transactions"):
            table = load_table(self._table.catalog.catalog(), self._table.identifier)
        if table is None:
            return []
        staging = self._staging({"location": table.location()})
        found = ((txid, staging.read(txid)) for txid in staging.txids(prefix))
        return [(txid, manifest) for txid, manifest in found if manifest is not None]

    def close(self) -> None:
        """Drop the catalog built by this participant."""
        self._table.close()

    def _staging(self, manifest: Mapping[str, Any]) -> StagingArea:
        location = str(manifest["location"])
        if location not in self._staging_areas:
            self._staging_areas[location] = StagingArea(*open_location(location))
        return self._staging_areas[location]

    def _stage(self, txid: str, manifest: dict[str, Any], rows: pa.Table) -> dict[str, Any]:
        """Stage ``rows`` as a new file of ``txid``: its path and record count."""
        # Columns cast to the table's types carry its field ids. Added files are read through
        # the table's name mapping only when they carry none: Iceberg's Java readers (Spark's)
        # go by a file's ids once one column has one, and read the others as nulls.
        rows = rows.cast(pa.schema([_without_field_id(field) for field in rows.schema]))
        action = self._staging(manifest).stage(txid, manifest, rows)
        return {"path": action["path"], "rows": rows.num_rows}

    def _commit_once(self, token: Token) -> _Committed:
        """One attempt on the current snapshot; raises ``CommitFailedException`` when another
        writer committed first."""
        table = load_table(self._table.catalog.catalog(), self._table.identifier)
        if table is None:
            raise TwoPhaseCommitError(
                f"{self.target} (participant {self._name!r}) is gone, with the files staged "
                f"for {token.txid}"
            )
        app_id, number = str(token.data["app_id"]), int(token.data["number"])
        record = commit_record(table)
        committed = record.committed(app_id)
        number_taken = committed is not None and committed >= number
        if number_taken:
            own = self._own_commit(table, token)
            if own is not None:
                return own
            number = committed + 1  # type: ignore[operator]
        staging = self._staging(token.data)
        manifest = staging.read(token.txid)
        if manifest is None:
            raise TwoPhaseCommitError(
                f"the staged files of {token.txid} in {self.target} (participant "
                f"{self._name!r}) are gone and no snapshot added them: the transaction was "
                f"rolled back after its commit decision, by another application using app_id "
                f"{app_id!r} or by hand"
            )
        snapshot = table.current_snapshot()
        if (None if snapshot is None else snapshot.snapshot_id) != manifest["snapshot"]:
            manifest = self._restage(table, token.txid, manifest)
        staged = manifest[_COMMIT]
        if not staged:
            return _Committed(frozenset(), 0, number_taken)
        transaction = without_rebase(table).transaction()
        transaction.add_files(
            [f"{manifest['location']}/{f['path']}" for f in staged],
            snapshot_properties=record.properties(app_id, number, None, token.txid),
            check_duplicate_files=False,
        )
        commit_marked(transaction)
        return _Committed(frozenset(f["path"] for f in staged),
                          sum(int(f["rows"]) for f in staged), number_taken)

    def _own_commit(self, table: Table, token: Token) -> _Committed | None:
        """This token's commit, found by its snapshot or, once that expired, by its files."""
        location = str(token.data["location"])
        own = transaction_snapshot(table, token.txid)
        if own is not None:
            added = [entry.data_file
                     for manifest in own.manifests(table.io)
                     if manifest.added_snapshot_id == own.snapshot_id
                     for entry in manifest.fetch_manifest_entry(table.io)]
        else:
            manifest = self._staging(token.data).read(token.txid) or dict(token.data)
            paths = {f"{location}/{f}" for f in manifest["files"]}
            added = [task.file for task in table.scan().plan_files()
                     if task.file.file_path in paths]
            if not added:
                return None
        return _Committed(frozenset(f.file_path.removeprefix(f"{location}/") for f in added),
                          sum(int(f.record_count) for f in added))

    def _restage(self, table: Table, txid: str, manifest: dict[str, Any]) -> dict[str, Any]:
        """The manifest, its files to commit left with the staged records whose keys
        ``table`` does not hold (staged anew when some are left out)."""
        staging = self._staging(manifest)
        staged = staging.rows([{"path": f["path"]} for f in manifest[_COMMIT]])
        absent = _absent(table, staged, list(manifest["keys"]))
        if absent.num_rows < staged.num_rows:
            manifest[_COMMIT] = [self._stage(txid, manifest, absent)] if absent.num_rows else []
        snapshot = table.current_snapshot()
        manifest["snapshot"] = None if snapshot is None else snapshot.snapshot_id
        staging.write(txid, manifest)
        return manifest


def staged_participants(table: str, catalog: Catalog | Mapping[str, Any],
                        prefix: str) -> list[IcebergParticipant]:
    """A participant for each name with files staged under ``prefix`` in the table: enough to
    commit or roll them back from any process (none when the catalog has no such table).

    Raises:
        MissingExtraError: pyiceberg is not installed.
    """
    finder = IcebergParticipant(table, catalog=catalog, create_table=False)
    names = sorted({str(manifest.get("participant")) for _, manifest in finder.staged(prefix)})
    return [IcebergParticipant(table, catalog=catalog, name=name, create_table=False)
            for name in names]
