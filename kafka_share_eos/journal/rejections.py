"""Records the consumer holding them must REJECT instead of ACCEPT, kept beside the journal.

A share group takes an acknowledgement only from the member that acquired the record, and the
source's member (in Spark's source runner) acknowledges a batch only after Spark committed it.
A strategy that refuses a record, in the driver, therefore cannot REJECT it itself: it writes
the record's coordinates here, durably, before its batch commits, and the source REJECTs
every held record found here when it settles the batch. The decision outlives any crash: a
batch replayed from the journal, or a record the broker delivers again after its consumer
died, is looked up by its coordinates, which never change, and REJECTed again until the
broker took one REJECT (it then archives the record and never delivers it again).

Each write is one small JSON file named after its batch and content, never changed afterwards,
so a reader caches what it read. A marker file says that a pipeline routes its refusals here,
so that the source can refuse the acknowledgement modes that ACCEPT before a strategy ran.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

import pyarrow.fs as pafs

from kafka_share_eos._process_local import ProcessLocal
from kafka_share_eos.storage import Location, as_location, write_atomically

REJECTIONS_DIR = "_rejections"
_MARKER = "routed-to-broker-dead-letter-queue"

Coordinates = tuple[str, int, int]
"""A record's ``(topic, partition, offset)``."""


class RecordRejections(ProcessLocal):
    """The REJECT decisions of the pipeline whose journal is at ``journal``; a pickled copy
    reads them again rather than take over what this process read."""

    _PROCESS_LOCAL = ProcessLocal.attributes(_read=dict)

    def __init__(self, journal: str | Location) -> None:
        self.journal = as_location(journal)
        self.where = self.journal.child(REJECTIONS_DIR)
        # File name -> (batch id, records): files never change once written.
        self._read: dict[str, tuple[int, frozenset[Coordinates]]] = {}

    def _open(self, create: bool = False) -> tuple[pafs.FileSystem, str]:
        # Only a write creates the directory: a pipeline that never routes refusals here
        # gets none.
        return self.where.open(create=create)

    def route_here(self) -> None:
        """Say that the pipeline's refusals are REJECTed (see :meth:`routed`)."""
        fs, root = self._open(create=True)
        write_atomically(fs, f"{root}/{_MARKER}", b"REJECT refused records\n")

    def routed(self) -> bool:
        """Whether a dead-letter sink routes the pipeline's refusals here."""
        fs, root = self._open()
        return bool(fs.get_file_info(f"{root}/{_MARKER}").type == pafs.FileType.File)

    def beside_a_journal(self) -> bool:
        """Whether ``journal`` holds segments (``*.arrow``), as the source's journal does while
        a batch runs: refusals kept anywhere else would never be read."""
        fs, root = self.journal.open()
        selector = pafs.FileSelector(root, allow_not_found=True)
        return any(info.base_name.endswith(".arrow") for info in fs.get_file_info(selector))

    def add(self, batch_id: int, refused: Iterable[Coordinates]) -> int:
        """Durably add ``refused`` as decided in batch ``batch_id``; return how many were new."""
        new = sorted(set(refused) - self.refused())
        if not new:
            # A replayed batch, or a redelivery refused again: already durable.
            return 0
        payload = json.dumps(new).encode()
        digest = hashlib.sha256(payload).hexdigest()[:16]
        fs, root = self._open(create=True)
        write_atomically(fs, f"{root}/{batch_id:020d}-{digest}.json", payload)
        return len(new)

    def refused(self) -> frozenset[Coordinates]:
        """Every record decided so far."""
        return frozenset(self.decided())

    def decided(self) -> dict[Coordinates, int]:
        """Every record decided so far, with the first batch that decided it."""
        fs, root = self._open()
        for info in fs.get_file_info(pafs.FileSelector(root, allow_not_found=True)):
            if info.base_name.endswith(".json") and info.base_name not in self._read:
                with fs.open_input_stream(info.path) as stream:
                    rows = json.loads(stream.read())
                self._read[info.base_name] = (int(info.base_name[:20]), frozenset(
                    (str(topic), int(partition), int(offset)) for topic, partition, offset in rows
                ))
        decided: dict[Coordinates, int] = {}
        for batch_id, records in sorted(self._read.values(), key=lambda entry: entry[0]):
            for record in records:
                decided.setdefault(record, batch_id)
        return decided
