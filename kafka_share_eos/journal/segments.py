"""The batch journal: the source's durable copy of every record it fetched.

:class:`Journal` is the one way in to a journal's files: its segments, and beside them the
consumers' leases, the batch metrics and the records to REJECT (``journal.leases``,
``journal.metrics()``, ``journal.rejections``), all under the location given once.

Each planned micro-batch is one or more *segments*, numbered by a sequence that is also the
stream's offset. A segment is an Arrow IPC file named ``<seq, 20 digits>.arrow``; it appears
atomically (temp file + fsync + rename on a local disk, temp + move on HDFS-like stores, a single
put on object stores, whose writes are atomic), so a reader sees a whole segment or none.
Executors read segments in ``read(partition)``: the first run of a batch and its replay after a
crash read the same bytes. Only segment files are listed: the ``_metrics`` directory and temp
files next to them are never segments.

With ``consumers=N`` a batch is one sequence number and N *slots*, each written by the executor
task that polled it, one *part* per poll: ``<seq>-<slot, 4 digits>.arrow`` for the first,
``<seq>-<slot>-<part, 4 digits>.arrow`` for the next ones. Every part but the slot's last says so
in its schema metadata (a part without the mark ends the slot), so a slot is a chain that a
reader either finds complete or knows to be unfinished. Each part is created first-writer-wins
(:func:`~kafka_share_eos.storage.write_if_absent`) and only after the part before it, which did
not end the chain, so the chain is one and the same for every writer: a retried or speculative
task of the same slot, or a second Spark action over the same batch, reads the complete chain
instead of polling, and a task that finds it unfinished (its writer died) carries it on.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from kafka_share_eos import formats
from kafka_share_eos.errors import JournalError as JournalError
from kafka_share_eos.journal.leases import LEASES_DIR, Leases
from kafka_share_eos.journal.metrics_store import DEFAULT_KEPT, METRICS_DIR, MetricsStore
from kafka_share_eos.journal.rejections import REJECTIONS_DIR, RecordRejections
from kafka_share_eos.journal.schema import JOURNAL_SCHEMA
from kafka_share_eos.storage import Location, as_location, write_atomically, write_if_absent

_SEGMENT = re.compile(r"^(\d{20})(?:-(\d{4})(?:-(\d{4}))?)?\.arrow$")
# The schema metadata key of a slot part after which the slot's chain goes on.
_MORE = b"kafka_share_eos.more"


def is_journal_name(name: str) -> bool:
    """Whether ``name``, directly in a journal's directory, is the journal's: a segment, its
    metrics, leases or rejections folder, or a file an atomic write has not yet renamed."""
    return (bool(_SEGMENT.match(name)) or name.startswith(".tmp-")
            or name in (METRICS_DIR, LEASES_DIR, REJECTIONS_DIR))


def segment_name(seq: int, slot: int | None = None, part: int = 0) -> str:
    """The file name of segment ``seq`` (of part ``part`` of its slot ``slot``, with
    ``consumers=N``)."""
    if slot is None:
        return f"{seq:020d}.arrow"
    suffix = "" if part == 0 else f"-{part:04d}"
    return f"{seq:020d}-{slot:04d}{suffix}.arrow"


def _which(seq: int, slot: int | None) -> str:
    return f"{seq}" if slot is None else f"{seq} (slot {slot})"


def _unwritten(which: str, path: str, error: OSError) -> JournalError:
    # Every caller acknowledges a poll only after its segment was written, so a failed write
    # leaves its records unacknowledged: the share group delivers them again after a restart.
    # The OS error alone names no file (a full disk fails the write, not the open).
    return JournalError(
        f"could not write journal segment {which} at {path}: {error}; none of its records was "
        "acknowledged: free space on the journal's storage (or make it writable) and restart "
        "the query"
    )


def _ipc_file(batch: pa.RecordBatch) -> pa.Buffer:
    # The segment names its format, so a later release reading this journal knows it.
    version = str(formats.JOURNAL_SEGMENT).encode()
    batch = batch.replace_schema_metadata({**(batch.schema.metadata or {}),
                                           formats.SCHEMA_KEY: version})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue()


class Journal:
    """Segments of one stream under ``where``: a local path, an object store URI (with its
    store settings in a :class:`~kafka_share_eos.storage.Location`) or any ``pyarrow.fs`` URI.

    Only the location is pickled: each process opens the filesystem itself.

    With ``create=False`` the journal is for inspecting: nothing is created, not even the
    object that checks an object store's conditional writes (a store that credentials only
    let read, or that takes no conditional write, is read all the same), and every write,
    purge included, is refused.
    """

    def __init__(self, where: str | Location, *, create: bool = True) -> None:
        self.where = as_location(where)
        self.location = self.where.uri
        self.create = create
        self._fs: pafs.FileSystem | None = None
        self._root = ""

    def __getstate__(self) -> dict[str, Any]:
        return {"where": self.where, "location": self.location, "create": self.create,
                "_fs": None, "_root": ""}

    @functools.cached_property
    def leases(self) -> Leases:
        """The leases of the journal's consumers on their record locks."""
        return Leases(self.where)

    @functools.cached_property
    def rejections(self) -> RecordRejections:
        """The records a strategy refused, for the source to REJECT."""
        return RecordRejections(self.where)

    def metrics(self, keep: int = DEFAULT_KEPT, *, create: bool = True) -> MetricsStore:
        """The batch metrics kept beside the segments (the newest ``keep``); without
        ``create`` nothing is created, for inspecting a journal without changing it."""
        return MetricsStore(self.where, keep, create=create)

    def _filesystem(self) -> tuple[pafs.FileSystem, str]:
        if self._fs is None:
            self._fs, self._root = self.where.open(create=self.create)
        return self._fs, self._root

    def _writable(self) -> pafs.FileSystem:
        # Only a journal opened with create checked that its store refuses a second create.
        if not self.create:
            raise JournalError(f"the journal at {self.location!r} was opened for inspecting "
                               "(create=False): it is never written")
        return self._filesystem()[0]

    def _path(self, seq: int, slot: int | None = None, part: int = 0) -> str:
        return f"{self._filesystem()[1]}/{segment_name(seq, slot, part)}"

    def write(self, seq: int, batch: pa.RecordBatch) -> None:
        """Make segment ``seq`` durable and visible atomically.

        Raises:
            JournalError: the write failed (a full disk, no permission): the message names
                the segment's path and the OS error, which is its ``__cause__``.
        """
        fs = self._writable()
        path = self._path(seq)
        try:
            write_atomically(fs, path, _ipc_file(batch))
        except OSError as error:
            raise _unwritten(_which(seq, None), path, error) from error

    def write_slot(
        self, seq: int, slot: int, batch: pa.RecordBatch, part: int = 0, last: bool = True
    ) -> bool:
        """Make part ``part`` of slot ``slot`` of batch ``seq`` durable unless it exists, marked
        as the slot's ``last`` or not; return whether this call wrote it (False: another writer
        did first, read theirs).

        Raises:
            JournalError: the write failed, as in :meth:`write`.
        """
        fs = self._writable()
        marked = batch if last else batch.replace_schema_metadata({_MORE: b"true"})
        path = self._path(seq, slot, part)
        try:
            return write_if_absent(fs, path, _ipc_file(marked))
        except OSError as error:
            raise _unwritten(f"{_which(seq, slot)} part {part}", path, error) from error

    def read(self, seq: int, slot: int | None = None) -> pa.Table:
        """Read segment ``seq`` (its slot ``slot``, complete); raise :class:`JournalError` if it
        is gone, unfinished or damaged."""
        table = self.read_present(seq, slot)
        if table is None:
            raise JournalError(
                f"journal segment {_which(seq, slot)} ({self._path(seq, slot)}) is missing or "
                f"unfinished: the journal at "
                f"{self.location!r} was changed outside this query, or is shared by two queries"
            )
        return table

    def read_present(self, seq: int, slot: int | None = None) -> pa.Table | None:
        """Read segment ``seq`` (its slot ``slot``); None while it is gone or unfinished.

        Raises:
            JournalError: the segment is damaged: truncated, empty, of another schema or
                unreadable (each is named, never skipped).
        """
        if slot is None:
            return self._read(self._path(seq), _which(seq, slot))
        return self.read_slot(seq, slot)

    def read_slot(self, seq: int, slot: int) -> pa.Table | None:
        """Read slot ``slot`` of batch ``seq``; None until a task completed it."""
        parts, complete = self.slot_parts(seq, slot)
        return pa.concat_tables(parts) if complete else None

    def slot_parts(self, seq: int, slot: int) -> tuple[list[pa.Table], bool]:
        """The parts of slot ``slot`` of batch ``seq`` written so far, and whether they end
        the slot."""
        parts: list[pa.Table] = []
        while True:
            found = self.slot_part(seq, slot, len(parts))
            if found is None:
                return parts, False
            table, last = found
            parts.append(table)
            if last:
                return parts, True

    def slot_part(self, seq: int, slot: int, part: int) -> tuple[pa.Table, bool] | None:
        """Part ``part`` of slot ``slot`` of batch ``seq`` and whether it ends the slot; None
        when no task wrote it yet."""
        table = self._read(self._path(seq, slot, part), f"{_which(seq, slot)} part {part}")
        if table is None:
            return None
        last = _MORE not in (table.schema.metadata or {})
        return table.replace_schema_metadata(JOURNAL_SCHEMA.metadata), last

    def _read(self, path: str, which: str) -> pa.Table | None:
        fs, _ = self._filesystem()
        try:
            with fs.open_input_file(path) as source:
                table = pa.ipc.open_file(source).read_all()
        except FileNotFoundError:
            return None
        except (OSError, pa.ArrowInvalid) as error:
            raise JournalError(
                f"journal segment {which} ({path}) is damaged or unreadable: {error}"
            ) from error
        # Before the schema: a newer format may have another one, and is refused as such.
        formats.check_format("journal segment", (table.schema.metadata or {}).get(
            formats.SCHEMA_KEY), formats.JOURNAL_SEGMENT, path)
        if not table.schema.equals(JOURNAL_SCHEMA):
            raise JournalError(f"journal segment {which} ({path}) has an unexpected schema")
        return table

    def _files(self) -> list[tuple[int, int | None, str]]:
        fs, root = self._filesystem()
        found = []
        for info in fs.get_file_info(pafs.FileSelector(root)):
            match = _SEGMENT.match(info.base_name)
            if match is not None:
                slot = None if match[2] is None else int(match[2])
                found.append((int(match[1]), slot, info.path))
        return found

    def names(self) -> list[str]:
        """Base names of what lies directly in the journal's directory, segments and the
        journal's own folders included."""
        fs, root = self._filesystem()
        return [info.base_name for info in fs.get_file_info(pafs.FileSelector(root))]

    def entries(self) -> list[tuple[int, int | None]]:
        """``(seq, slot)`` of every segment present, ascending; ``slot`` is None for a whole
        batch's segment."""
        found = {(seq, slot) for seq, slot, _ in self._files()}
        return sorted(found, key=lambda entry: (entry[0], -1 if entry[1] is None else entry[1]))

    def sequences(self) -> list[int]:
        """Sequence numbers of the segments present, ascending."""
        return sorted({seq for seq, _ in self.entries()})

    def purge(self, through: int) -> list[int]:
        """Delete the segments numbered ``through`` or lower; return the numbers deleted."""
        fs = self._writable()
        doomed = [(seq, path) for seq, _, path in self._files() if seq <= through]
        for _, path in doomed:
            fs.delete_file(path)
        return sorted({seq for seq, _ in doomed})
