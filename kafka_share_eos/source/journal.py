"""The batch journal: the source's durable copy of every record it fetched.

Each planned micro-batch is one or more *segments*, numbered by a sequence that is also the
stream's offset. A segment is an Arrow IPC file named ``<seq, 20 digits>.arrow``; it appears
atomically (temp file + fsync + rename on a local disk, temp + move on HDFS-like stores, a single
put on object stores, whose writes are atomic), so a reader sees a whole segment or none.
Executors read segments in ``read(partition)``: the first run of a batch and its replay after a
crash read the same bytes. Only segment files are listed: the ``_metrics`` directory and temp
files next to them are never segments.
"""

from __future__ import annotations

import re
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_share_eos.source.schema import JOURNAL_SCHEMA
from kafka_share_eos.storage import open_location, write_atomically

_SEGMENT = re.compile(r"^(\d{20})\.arrow$")


class JournalError(RuntimeError):
    """A journal segment is missing or unreadable."""


def segment_name(seq: int) -> str:
    """The file name of segment ``seq``."""
    return f"{seq:020d}.arrow"


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

    def _path(self, seq: int) -> str:
        return f"{self._filesystem()[1]}/{segment_name(seq)}"

    def write(self, seq: int, batch: pa.RecordBatch) -> None:
        """Make segment ``seq`` durable and visible atomically."""
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, batch.schema) as writer:
            writer.write_batch(batch)
        fs, root = self._filesystem()
        write_atomically(fs, f"{root}/{segment_name(seq)}", sink.getvalue())

    def read(self, seq: int) -> pa.Table:
        """Read segment ``seq``; raise :class:`JournalError` if it is gone."""
        fs, _ = self._filesystem()
        path = self._path(seq)
        try:
            with fs.open_input_file(path) as source:
                table = pa.ipc.open_file(source).read_all()
        except FileNotFoundError:
            raise JournalError(
                f"journal segment {seq} ({path}) is missing: the journal at {self.location!r} "
                "was changed outside this query, or is shared by two queries"
            ) from None
        if not table.schema.equals(JOURNAL_SCHEMA):
            raise JournalError(f"journal segment {seq} ({path}) has an unexpected schema")
        return table

    def sequences(self) -> list[int]:
        """Sequence numbers of the segments present, ascending."""
        fs, root = self._filesystem()
        found = []
        for info in fs.get_file_info(pafs.FileSelector(root)):
            match = _SEGMENT.match(info.base_name)
            if match is not None:
                found.append(int(match[1]))
        return sorted(found)

    def purge(self, through: int) -> list[int]:
        """Delete the segments numbered ``through`` or lower; return the numbers deleted."""
        fs, _ = self._filesystem()
        doomed = [seq for seq in self.sequences() if seq <= through]
        for seq in doomed:
            fs.delete_file(self._path(seq))
        return doomed

