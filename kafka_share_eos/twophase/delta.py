"""A Delta participant: data files written at prepare, added to the Delta log only at commit.

Prepare writes a manifest naming the files it is about to write (``_kse_2pc/<txid>.json`` in the
table directory), then the Parquet files themselves into the table directory. Files not in the
Delta log are invisible to readers, so prepared data is durable but not visible. Commit is one
Delta commit (``create_write_transaction``) adding the files together with the application
transaction ``(app_id, version)``; a commit whose version the table already holds is skipped,
which makes commit idempotent. Abort deletes the files and the manifest.

The version is the table's current ``transaction_version(app_id) + 1`` at prepare time rather
than Spark's batch id: a reset checkpoint restarts batch ids at 0, which would silently turn
every later commit into a skipped one.

A record is written only if its key is not in the table yet (an anti-join on the key columns,
pruned with the files' min/max statistics), so redelivered records are not appended twice.

delta-rs panics after ``fork()``: use this participant in the driver process only. The module
imports without deltalake; the constructor checks that it is installed.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs

from kafka_share_eos import faults
from kafka_share_eos._extras import require
from kafka_share_eos.sinks import TargetTableError
from kafka_share_eos.storage import delete_if_present, open_location, write_atomically
from kafka_share_eos.twophase.protocol import Token, Transaction, check_name

if TYPE_CHECKING:
    from deltalake import DeltaTable

_STAGING_DIR = "_kse_2pc"


def _manifest_name(txid: str) -> str:
    return txid.replace(":", "=") + ".json"


def _file_stats(rows: pa.Table) -> str:
    """Delta ``stats`` JSON: record count, and min/max/null counts of integer and string columns.

    Floats are left out (NaN has no JSON form); readers treat missing statistics as unknown.
    """
    minimum: dict[str, Any] = {}
    maximum: dict[str, Any] = {}
    nulls: dict[str, int] = {}
    for name, column in zip(rows.column_names, rows.columns, strict=True):
        kind = column.type
        if not (pa.types.is_integer(kind) or pa.types.is_string(kind)
                or pa.types.is_large_string(kind)):
            continue
        nulls[name] = column.null_count
        if rows.num_rows > column.null_count:
            bounds = pc.min_max(column)
            minimum[name] = bounds["min"].as_py()
            maximum[name] = bounds["max"].as_py()
    return json.dumps(
        {"numRecords": rows.num_rows, "minValues": minimum, "maxValues": maximum,
         "nullCount": nulls}
    )


class DeltaParticipant:
    """Appends the batch's new records to a Delta table, atomically with the other participants.

    Args:
        table_uri: local path or URI of the Delta table; created from the first batch's schema.
        name: participant name, unique within a coordinator.
        storage_options: passed to delta-rs for object stores.

    Raises:
        MissingExtraError: deltalake is not installed.
        ConfigurationError: ``name`` is empty or has characters other than letters, digits,
            ``_`` and ``-``.
    """

    def __init__(
        self,
        table_uri: str,
        *,
        name: str = "delta",
        storage_options: dict[str, str] | None = None,
    ) -> None:
        require("deltalake", "delta", "DeltaParticipant")
        self._uri = table_uri.rstrip("/")
        self._name = check_name("name", name)
        self._storage_options = storage_options
        self._fs, self._root = open_location(self._uri)

    @property
    def name(self) -> str:
        """Participant name."""
        return self._name

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        """Write the records whose keys are not in the table yet as unlisted files.

        Raises:
            TargetTableError: the table has other columns than the batch.
        """
        from kafka_share_eos.sinks.delta import rows_absent

        table = self._table(rows.schema)
        schema = pa.schema(table.schema().to_arrow())
        if set(schema.names) != set(rows.column_names):
            raise TargetTableError(
                f"Delta table {self._uri!r} (participant {self._name!r}) has columns "
                f"{schema.names}, the batch has {rows.column_names}: select the table's columns "
                "before the coordinator, or write to a new table"
            )
        new_rows = rows_absent(table, rows.select(schema.names).cast(schema), txn.key_columns)
        if new_rows.num_rows == 0:
            return Token(self._name, txn.txid, 0, {"files": []})
        relative = f"part-00000-{uuid.uuid4()}-kse.c000.snappy.parquet"
        version = (table.transaction_version(txn.app_id) or 0) + 1
        manifest = {"app_id": txn.app_id, "version": version, "files": [relative]}
        # Manifest first: a crash while writing data then leaves files recovery knows about.
        self._write_manifest(txn.txid, manifest)
        pq.write_table(new_rows, f"{self._root}/{relative}", filesystem=self._fs,
                       compression="snappy")
        info = self._fs.get_file_info(f"{self._root}/{relative}")
        manifest["actions"] = [{
            "path": relative,
            "size": info.size,
            "modification_time": int(time.time() * 1000),
            "stats": _file_stats(new_rows),
        }]
        self._write_manifest(txn.txid, manifest)
        faults.maybe_crash("2pc.delta.after_stage")
        return Token(self._name, txn.txid, new_rows.num_rows, manifest)

    def commit(self, token: Token) -> None:
        """One Delta commit adding the staged files, unless the table already has this version."""
        if not token.data.get("files"):
            return
        from deltalake import CommitProperties, DeltaTable
        from deltalake import Transaction as DeltaTxn
        from deltalake.transaction import AddAction

        table = DeltaTable(self._uri, storage_options=self._storage_options)
        app_id, version = str(token.data["app_id"]), int(token.data["version"])
        if (table.transaction_version(app_id) or 0) < version:
            table.create_write_transaction(
                [
                    AddAction(a["path"], int(a["size"]), {}, int(a["modification_time"]), True,
                              str(a["stats"]))
                    for a in token.data["actions"]
                ],
                mode="append",
                schema=table.schema(),
                commit_properties=CommitProperties(app_transactions=[DeltaTxn(app_id, version)]),
            )
        delete_if_present(self._fs, f"{self._root}/{_STAGING_DIR}/{_manifest_name(token.txid)}")

    def abort(self, token: Token) -> None:
        """Delete the staged files and their manifest."""
        for relative in token.data.get("files", []):
            delete_if_present(self._fs, f"{self._root}/{relative}")
        delete_if_present(self._fs, f"{self._root}/{_STAGING_DIR}/{_manifest_name(token.txid)}")

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys`` (the key columns), whether a committed batch wrote it."""
        from kafka_share_eos.sinks.delta import delta_keys_held

        return delta_keys_held(self._uri, keys, self._storage_options)

    def recover(self, prefix: str) -> list[Token]:
        """Tokens of the manifests still staged under ``prefix``."""
        selector = fs.FileSelector(f"{self._root}/{_STAGING_DIR}", allow_not_found=True)
        tokens = []
        for info in self._fs.get_file_info(selector):
            if info.type != fs.FileType.File or not info.base_name.endswith(".json"):
                continue
            txid = info.base_name[: -len(".json")].replace("=", ":")
            if txid.startswith(prefix):
                manifest = self._read_manifest(txid)
                tokens.append(Token(self._name, txid, 0, manifest))
        return tokens

    def _table(self, schema: pa.Schema) -> DeltaTable:
        from deltalake import DeltaTable

        if not DeltaTable.is_deltatable(self._uri, storage_options=self._storage_options):
            DeltaTable.create(self._uri, schema, mode="ignore",
                              storage_options=self._storage_options)
        return DeltaTable(self._uri, storage_options=self._storage_options)

    def _write_manifest(self, txid: str, manifest: dict[str, Any]) -> None:
        directory = f"{self._root}/{_STAGING_DIR}"
        self._fs.create_dir(directory, recursive=True)
        write_atomically(self._fs, f"{directory}/{_manifest_name(txid)}",
                         json.dumps(manifest).encode())

    def _read_manifest(self, txid: str) -> dict[str, Any]:
        path = f"{self._root}/{_STAGING_DIR}/{_manifest_name(txid)}"
        with self._fs.open_input_stream(path) as stream:
            manifest: dict[str, Any] = json.loads(stream.read().decode())
        return manifest

