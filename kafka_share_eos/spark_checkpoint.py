"""A Spark checkpoint left half-written by a kill: recognise it, explain it, repair it.

Spark writes each offset-log entry to a temporary file (``offsets/.<batch>.<uuid>.tmp``, with
Hadoop's checksum ``offsets/..<batch>.<uuid>.tmp.crc`` on local disks) and renames it into
place. A process killed during the very first write leaves only those temporary files. On its
next start Spark finds no batch in the log, takes the query for a new one and, from Spark 4.1
on, refuses to start it unless ``offsets/`` and ``commits/`` are empty
(``STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY``). The query cannot have run batch 0, so nothing
was applied for it; the ``kafka-share`` source's journal still holds what it fetched and the
next run plans it first. Removing the temporary files is therefore safe, and it is all
:func:`repair` does.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow.fs as pafs

from kafka_share_eos.storage import delete_if_present, open_existing

# The logs Spark 4.1+ wants empty when it finds no batch in the offset log.
_CHECKED_LOGS = ("offsets", "commits")
# What a query writes at the root of its checkpoint; a directory with none of them holding
# anything else was never one.
_SPARK_ENTRIES = frozenset({"metadata", "offsets", "commits", "sources", "state", ".metadata.crc"})
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# CheckpointFileManager's temporary name for a log entry, and Hadoop's checksum of it.
_TEMP_FILE = re.compile(rf"^\.\d+\.{_UUID}\.tmp$|^\.\.\d+\.{_UUID}\.tmp\.crc$")


@dataclass(frozen=True)
class CheckpointReport:
    """What :func:`diagnose` found in a Spark checkpoint (paths relative to it)."""

    checkpoint: str
    logged_batches: int
    leftovers: tuple[str, ...] = ()
    unexpected: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    foreign: tuple[str, ...] = ()

    @property
    def healthy(self) -> bool:
        """Whether Spark can start the query from this checkpoint as it is."""
        return not self.leftovers and not self.unexpected and not self.foreign

    @property
    def is_checkpoint(self) -> bool:
        """False when the directory holds files, but none a Spark query writes."""
        return not self.foreign

    def explanation(self) -> str:
        """One paragraph: what happened and what to do."""
        if self.foreign:
            return (
                f"This is not a Spark checkpoint: it holds {', '.join(self.foreign)} and none "
                "of what a streaming query writes (metadata, offsets/, commits/, sources/). Is "
                "it the query's journalPath, or another directory? Give the query's "
                "checkpointLocation."
            )
        if self.removed and self.healthy:
            return (
                f"Removed {len(self.removed)} temporary file(s) of the offset-log write a kill "
                "interrupted before batch 0 was logged. The query starts again from this "
                "checkpoint; the kafka-share source plans what its journal holds first, and "
                "the strategies apply each record once."
            )
        if self.healthy:
            if self.logged_batches:
                return (
                    f"The offset log holds {self.logged_batches} batch(es); Spark restarts "
                    "the query from its last one."
                )
            return (
                "No batch was logged yet and nothing is in the way: Spark starts the query at "
                "batch 0, and the kafka-share source plans what its journal holds first."
            )
        if self.unexpected:
            return (
                f"The offset log holds no batch, but {', '.join(self.unexpected)} "
                "is not a temporary file of an interrupted write, so Spark will refuse to "
                "start the query (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY) and this command "
                "removes nothing. Was this checkpoint used by another query, or edited by "
                "hand? Use a new checkpoint location with a new journalPath, or move these "
                "files away yourself."
            )
        return (
            "The process running this query was killed while Spark wrote the first entry of "
            f"its offset log and left {', '.join(self.leftovers)}, so batch 0 was never "
            "logged, and Spark 4.1+ refuses to start the query from this checkpoint "
            "(STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY: the checkpoint location .../offsets "
            "should be empty on batch 0). Removing those temporary files is safe: batch 0 never "
            "ran, so nothing was applied for it; the kafka-share source's journal still holds "
            "every record it fetched and the next run plans them first (records the broker "
            "redelivers as well are absorbed by the strategies' record identities), so nothing "
            "is lost or applied twice. Run this command again with --fix to remove them."
        )

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready values."""
        return {
            "checkpoint": self.checkpoint,
            "healthy": self.healthy,
            "logged_batches": self.logged_batches,
            "leftovers": list(self.leftovers),
            "unexpected": list(self.unexpected),
            "removed": list(self.removed),
            "is_checkpoint": self.is_checkpoint,
            "explanation": self.explanation(),
        }


def diagnose(
    checkpoint: str, storage_options: Mapping[str, str] | None = None
) -> CheckpointReport:
    """Look for what an interrupted first offset-log write leaves in ``checkpoint`` (a local
    path, an object store URI with its ``storage_options``, or another ``pyarrow.fs`` URI);
    changes nothing.

    Raises:
        LocationNotFoundError: there is no directory at ``checkpoint``.
    """
    fs, root = open_existing(checkpoint, storage_options)
    top = _names(fs, root)
    if top and _SPARK_ENTRIES.isdisjoint(top):
        return CheckpointReport(checkpoint, 0, foreign=tuple(top[:5]))
    entries = {log: _names(fs, f"{root}/{log}") for log in _CHECKED_LOGS}
    logged = [name for name in entries["offsets"] if name.isdigit()]
    if logged:
        # Spark reads the log from its last batch and ignores temporary files.
        return CheckpointReport(checkpoint, len(logged))
    found = [f"{log}/{name}" for log in _CHECKED_LOGS for name in entries[log]]
    return CheckpointReport(
        checkpoint,
        0,
        leftovers=tuple(p for p in found if _TEMP_FILE.match(p.split("/", 1)[1])),
        unexpected=tuple(p for p in found if not _TEMP_FILE.match(p.split("/", 1)[1])),
    )


def repair(
    checkpoint: str, storage_options: Mapping[str, str] | None = None
) -> CheckpointReport:
    """Remove exactly the temporary files :func:`diagnose` reports as left over (none when
    anything else is in the way) and report again."""
    report = diagnose(checkpoint, storage_options)
    if report.healthy or report.unexpected or report.foreign:
        return report
    fs, root = open_existing(checkpoint, storage_options)
    for path in report.leftovers:
        delete_if_present(fs, f"{root}/{path}")
    again = diagnose(checkpoint, storage_options)
    return CheckpointReport(
        again.checkpoint, again.logged_batches, again.leftovers, again.unexpected,
        removed=report.leftovers,
    )


def _names(fs: pafs.FileSystem, directory: str) -> list[str]:
    if fs.get_file_info(directory).type != pafs.FileType.Directory:
        return []
    return sorted(info.base_name for info in fs.get_file_info(pafs.FileSelector(directory)))
