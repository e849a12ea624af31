"""Where per-batch metrics are kept: one small JSON file per batch under ``<journal>/_metrics``.

One file per batch, named like the batch's journal segment (``<seq, 20 digits>.json``), rather
than one appended file: object stores cannot append, and a whole-file put is atomic everywhere.
The journal's segment listing ignores the directory. Only the newest ``keep`` files are kept.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import re

import pyarrow.fs as pafs

from kafka_share_eos.source.metrics import BatchMetrics
from kafka_share_eos.storage import Location, as_location, write_atomically

log = logging.getLogger("kafka_share_eos.source")

METRICS_DIR = "_metrics"
DEFAULT_KEPT = 1000

_ENTRY = re.compile(r"^(\d{20})\.json$")


def entry_name(seq: int) -> str:
    """The file name of batch ``seq``'s metrics."""
    return f"{seq:020d}.json"


class MetricsStore:
    """The metrics files of the journal at ``journal_location``.

    Args:
        journal_location: the stream's ``journalPath`` (local path or ``pyarrow.fs`` URI).
        keep: how many of the newest entries :meth:`prune` keeps.
        create: create the directories when missing; without it a missing journal raises
            :class:`~kafka_share_eos.errors.LocationNotFoundError` (for inspecting a journal
            without changing it).
    """

    def __init__(
        self,
        journal_location: str | Location,
        keep: int = DEFAULT_KEPT,
        *,
        create: bool = True,
    ) -> None:
        self._where = as_location(journal_location)
        self.journal_location = self._where.uri
        self.keep = keep
        self._create = create
        self._fs: pafs.FileSystem | None = None
        self._dir = ""
        # Entries present, ascending: listed once, then kept up to date, so pruning on every
        # planning costs no listing.
        self._present: list[int] | None = None

    def _filesystem(self) -> tuple[pafs.FileSystem, str]:
        if self._fs is None:
            if self._create:
                fs, root = self._where.child(METRICS_DIR).open(create=True)
                self._dir = root
            else:
                fs, root = self._where.open_existing()
                self._dir = f"{root}/{METRICS_DIR}"
            self._fs = fs
        return self._fs, self._dir

    def write(self, metrics: BatchMetrics) -> None:
        """Store one batch's metrics; a failure is logged, never raised (they are not data)."""
        try:
            fs, directory = self._filesystem()
            path = f"{directory}/{entry_name(metrics.seq)}"
            write_atomically(fs, path, metrics.to_json().encode())
            present = self._known()
        except OSError:
            log.warning("could not write the metrics of batch %d", metrics.seq, exc_info=True)
            return
        if metrics.seq not in present:
            bisect.insort(present, metrics.seq)

    def sequences(self) -> list[int]:
        """Batches with a metrics entry, ascending."""
        fs, directory = self._filesystem()
        found = []
        for info in fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True)):
            match = _ENTRY.match(info.base_name)
            if match is not None:
                found.append(int(match[1]))
        return sorted(found)

    def read(self, seq: int) -> BatchMetrics:
        """The metrics of batch ``seq``."""
        fs, directory = self._filesystem()
        path = f"{directory}/{entry_name(seq)}"
        with fs.open_input_stream(path) as source:
            return BatchMetrics.from_json(source.read(), where=path)

    def read_all(self) -> list[BatchMetrics]:
        """Every entry kept, oldest first."""
        return [self.read(seq) for seq in self.sequences()]

    def prune(self) -> list[int]:
        """Delete all but the newest ``keep`` entries; return the sequences deleted.

        A failure is logged, never raised, like in :meth:`write`.
        """
        try:
            present = self._known()
            doomed = present[: max(0, len(present) - self.keep)]
            if doomed:
                fs, directory = self._filesystem()
                for seq in doomed:
                    # An entry someone already deleted is pruned all the same.
                    with contextlib.suppress(FileNotFoundError):
                        fs.delete_file(f"{directory}/{entry_name(seq)}")
        except OSError:
            log.warning("could not prune the batch metrics", exc_info=True)
            self._present = None
            return []
        del present[: len(doomed)]
        return doomed

    def _known(self) -> list[int]:
        if self._present is None:
            self._present = self.sequences()
        return self._present
