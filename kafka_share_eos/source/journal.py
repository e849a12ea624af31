"""The batch journal: the source's durable copy of every record it fetched.

Each planned micro-batch is one or more *segments*, numbered by a sequence that is also the
stream's offset. A segment is an Arrow IPC file named ``<seq, 20 digits>.arrow``; it appears
atomically (temp file + fsync + rename on a local disk, temp + move on HDFS-like stores, a single
put on object stores, whose writes are atomic), so a reader sees a whole segment or none.
Executors read segments in ``read(partition)``: the first run of a batch and its replay after a
crash read the same bytes. Only segment files are listed: the ``_metrics`` directory and temp
files next to them are never segments.

With ``consumers=N`` a batch is one sequence number and N *slot segments*
``<seq>-<slot, 4 digits>.arrow``, each written by the executor task that polled it. A slot
segment is created first-writer-wins (:func:`~kafka_share_eos.storage.write_if_absent`): a
retried or speculative task of the same slot, or a second Spark action over the same batch,
finds it and reads it instead of polling, so every reader of a batch sees the same records.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_share_eos.errors import KafkaShareEosError
from kafka_share_eos.source.schema import JOURNAL_SCHEMA
from kafka_share_eos.storage import open_location, write_atomically, write_if_absent

_SEGMENT = re.compile(r"^(\d{20})(?:-(\d{4}))?\.arrow$")


class JournalError(KafkaShareEosError, RuntimeError):
    """A journal segment is missing or unreadable."""


def segment_name(seq: int, slot: int | None = None) -> str:
    """The file name of segment ``seq`` (of its slot ``slot``, with ``consumers=N``)."""
    return f"{seq:020d}.arrow" if slot is None else f"{seq:020d}-{slot:04d}.arrow"


def _which(seq: int, slot: int | None) -> str:
    return f"{seq}" if slot is None else f"{seq} (slot {slot})"


def _ipc_file(batch: pa.RecordBatch) -> pa.Buffer:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue()


class Journal:
    """Segments of one stream under ``location`` (a local path or any ``pyarrow.fs`` URI).

    Only the location is pickled: each process opens the filesystem itself.
    """

    def __init__(self, location: str) -> None:
        self.location = location
        self._fs: pafs.FileSystem | None = None
        self._root = ""

    def __getstate__(self) -> dict[str, Any]:
        return {"location": self.location, "_fs": None, "_root": ""}

    def _filesystem(self) -> tuple[pafs.FileSystem, str]:
        if self._fs is None:
            self._fs, self._root = open_location(self.location, create=True)
        return self._fs, self._root

    def _path(self, seq: int, slot: int | None = None) -> str:
        return f"{self._filesystem()[1]}/{segment_name(seq, slot)}"

    def write(self, seq: int, batch: pa.RecordBatch) -> None:
        """Make segment ``seq`` durable and visible atomically."""
        fs, _ = self._filesystem()
        write_atomically(fs, self._path(seq), _ipc_file(batch))

    def write_slot(self, seq: int, slot: int, batch: pa.RecordBatch) -> bool:
        """Make slot ``slot`` of batch ``seq`` durable unless it exists; return whether this
        call wrote it (False: another writer did first, read theirs)."""
        fs, _ = self._filesystem()
        return write_if_absent(fs, self._path(seq, slot), _ipc_file(batch))

    def read(self, seq: int, slot: int | None = None) -> pa.Table:
        """Read segment ``seq`` (its slot ``slot``); raise :class:`JournalError` if it is gone."""
        table = self._read(seq, slot)
        if table is None:
            raise JournalError(
                f"journal segment {_which(seq, slot)} ({self._path(seq, slot)}) is missing: "
                f"the journal at "
                f"{self.location!r} was changed outside this query, or is shared by two queries"
            )
        return table

    def read_slot(self, seq: int, slot: int) -> pa.Table | None:
        """Read slot ``slot`` of batch ``seq``; None when no task wrote it yet."""
        return self._read(seq, slot)

    def _read(self, seq: int, slot: int | None) -> pa.Table | None:
        fs, _ = self._filesystem()
        path = self._path(seq, slot)
        try:
            with fs.open_input_file(path) as source:
                table = pa.ipc.open_file(source).read_all()
        except FileNotFoundError:
            return None
        if not table.schema.equals(JOURNAL_SCHEMA):
            raise JournalError(
                f"journal segment {_which(seq, slot)} ({path}) has an unexpected schema"
            )
        return table

    def entries(self) -> list[tuple[int, int | None]]:
        """``(seq, slot)`` of every segment present, ascending; ``slot`` is None for a whole
        batch's segment."""
        fs, root = self._filesystem()
        found = []
        for info in fs.get_file_info(pafs.FileSelector(root)):
            match = _SEGMENT.match(info.base_name)
            if match is not None:
                found.append((int(match[1]), None if match[2] is None else int(match[2])))
        return sorted(found, key=lambda entry: (entry[0], -1 if entry[1] is None else entry[1]))

    def sequences(self) -> list[int]:
        """Sequence numbers of the segments present, ascending."""
        return sorted({seq for seq, _ in self.entries()})

    def purge(self, through: int) -> list[int]:
        """Delete the segments numbered ``through`` or lower; return the numbers deleted."""
        fs, _ = self._filesystem()
        doomed = [(seq, slot) for seq, slot in self.entries() if seq <= through]
        for seq, slot in doomed:
            fs.delete_file(self._path(seq, slot))
        return sorted({seq for seq, _ in doomed})

