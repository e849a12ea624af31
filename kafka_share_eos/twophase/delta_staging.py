"""Where the Delta participant keeps prepared data: Parquet files in the table directory that the
Delta log does not list yet, and one manifest per transaction naming them.

The manifest ``<table>/_kse_2pc/<txid>.json`` is written (atomically) before each file it names,
so every staged file is listed in a manifest: recovery finds them all, and a commit or an abort
deletes exactly those not committed. Files outside the Delta log are invisible to readers.

Nothing here is fsynced: on a local disk, delta-rs writes the table's data files and log entries
without fsync, so the staged files and manifests are as durable as the commits they lead to
(they survive the death of the process, not of the machine); on object stores every write is
one durable put.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyarrow import fs

from kafka_share_eos import formats
from kafka_share_eos.storage import delete_if_present, write_atomically

STAGING_DIR = "_kse_2pc"

Manifest = dict[str, Any]
"""``participant``, ``app_id``, ``version``, ``snapshot``, ``keys``, ``files``, ``actions``;
its file also holds its format version, which :meth:`StagingArea.read` takes out."""


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


def action_rows(action: dict[str, Any]) -> int:
    """The records in the file a staged ``add`` action names."""
    return int(json.loads(action["stats"])["numRecords"])


class StagingArea:
    """The staged files and manifests of one Delta table (a local path or ``pyarrow.fs`` root)."""

    def __init__(self, filesystem: fs.FileSystem, root: str) -> None:
        self._fs = filesystem
        self._root = root
        self._dir = f"{root}/{STAGING_DIR}"

    def stage(self, txid: str, manifest: Manifest, rows: pa.Table) -> dict[str, Any]:
        """Write ``rows`` as a new unlisted data file of ``txid`` and return its ``add`` action.

        The file is added to ``manifest["files"]`` and the manifest written before the file, so
        a crash while writing data leaves a file the manifest names.
        """
        relative = f"part-00000-{uuid.uuid4()}-kse.c000.snappy.parquet"
        manifest["files"] = [*manifest.get("files", []), relative]
        self.write(txid, manifest)
        pq.write_table(rows, f"{self._root}/{relative}", filesystem=self._fs,
                       compression="snappy")
        info = self._fs.get_file_info(f"{self._root}/{relative}")
        return {
            "path": relative,
            "size": info.size,
            "modification_time": int(time.time() * 1000),
            "stats": _file_stats(rows),
        }

    def rows(self, actions: list[dict[str, Any]]) -> pa.Table:
        """The records of the staged files ``actions`` name."""
        return pa.concat_tables(
            pq.read_table(f"{self._root}/{a['path']}", filesystem=self._fs) for a in actions
        )

    def write(self, txid: str, manifest: Manifest) -> None:
        """Store ``txid``'s manifest atomically, with its format version."""
        self._fs.create_dir(self._dir, recursive=True)
        stored = {formats.FIELD: formats.STAGING_MANIFEST, **manifest}
        write_atomically(self._fs, f"{self._dir}/{_manifest_name(txid)}",
                         json.dumps(stored).encode(), durable=False)

    def read(self, txid: str) -> Manifest | None:
        """``txid``'s manifest, or ``None`` once its transaction was committed or rolled back.

        Raises:
            UnsupportedFormatError: a later release wrote it, in a format this one cannot read.
        """
        path = f"{self._dir}/{_manifest_name(txid)}"
        try:
            with self._fs.open_input_stream(path) as stream:
                manifest: Manifest = json.loads(stream.read().decode())
        except FileNotFoundError:
            return None
        # Taken out: the manifest also travels in the transaction's token, without it.
        found = manifest.pop(formats.FIELD, None)
        formats.check_format("Delta staging manifest", found, formats.STAGING_MANIFEST, path)
        return manifest

    def holds(self, txid: str) -> bool:
        """Whether ``txid`` still has a manifest (is neither committed nor rolled back)."""
        path = f"{self._dir}/{_manifest_name(txid)}"
        return bool(self._fs.get_file_info(path).type == fs.FileType.File)

    def txids(self, prefix: str) -> list[str]:
        """Transactions under ``prefix`` that still have a manifest."""
        selector = fs.FileSelector(self._dir, allow_not_found=True)
        names = (
            info.base_name for info in self._fs.get_file_info(selector)
            if info.type == fs.FileType.File and info.base_name.endswith(".json")
        )
        return sorted(
            txid for txid in (n[: -len(".json")].replace("=", ":") for n in names)
            if txid.startswith(prefix)
        )

    def discard(self, txid: str, keep: frozenset[str] = frozenset()) -> None:
        """Delete ``txid``'s staged files except those in ``keep`` (committed), then its manifest.

        A transaction without a manifest is finished: nothing of it is deleted.
        """
        manifest = self.read(txid)
        if manifest is None:
            return
        for relative in manifest.get("files", []):
            if relative not in keep:
                delete_if_present(self._fs, f"{self._root}/{relative}")
        delete_if_present(self._fs, f"{self._dir}/{_manifest_name(txid)}")
