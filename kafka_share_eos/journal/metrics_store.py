"""Where per-batch metrics are kept: one small JSON file per batch under ``<journal>/_metrics``.

One file per batch, named like the batch's journal segment (``<seq, 20 digits>.json``), rather
than one appended file: object stores cannot append, and a whole-file put is atomic everywhere.
The journal's segment listing ignores the directory. Only the newest ``keep`` files are kept.

With ``consumers=N`` each slot's task reports its part under ``_metrics/slots`` first; the
planner combines a batch's reports into its entry once Spark committed it, and deletes them.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import re

import pyarrow.fs as pafs

from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.storage import (
    STORE_ERRORS,
    Location,
    as_location,
    delete_if_present,
    write_atomically,
)

log = logging.getLogger("kafka_share_eos.source")

METRICS_DIR = "_metrics"
SLOT_METRICS_DIR = f"{METRICS_DIR}/slots"
DEFAULT_KEPT = 1000

_ENTRY = re.compile(r"^(\d{20})\.json$")


def entry_name(seq: int) -> str:
    """The file name of batch ``seq``'s metrics."""
    return f"{seq:020d}.json"


def slot_report_name(seq: int, slot: int) -> str:
    """The file name of one slot's report under ``_metrics/slots``."""
    return f"{seq:020d}-{slot:04d}.json"


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
        except STORE_ERRORS:
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
        except STORE_ERRORS:
            log.warning("could not prune the batch metrics", exc_info=True)
            self._present = None
            return []
        del present[: len(doomed)]
        return doomed

    def write_slot_report(self, slot: int, report: BatchMetrics) -> None:
        """Store what slot ``slot`` of batch ``report.seq`` polled and acknowledged.

        Raises:
            OSError: the write failed.
        """
        fs, root = self._where.child(SLOT_METRICS_DIR).open(create=True)
        write_atomically(fs, f"{root}/{slot_report_name(report.seq, slot)}",
                         report.to_json().encode())

    def slot_reports(self, through: int) -> dict[int, list[tuple[str, BatchMetrics]]]:
        """The slots' reports of the batches up to ``through``, each with its path, by batch;
        a report being replaced or unreadable is left for a later call."""
        fs, root = self._where.child(SLOT_METRICS_DIR).open(create=True)
        reports: dict[int, list[tuple[str, BatchMetrics]]] = {}
        for info in fs.get_file_info(pafs.FileSelector(root)):
            if not info.base_name.endswith(".json"):
                continue
            try:
                with fs.open_input_stream(info.path) as source:
                    report = BatchMetrics.from_json(source.read(), where=info.path)
            except (OSError, ValueError, TypeError):
                continue
            if report.seq <= through:
                reports.setdefault(report.seq, []).append((info.path, report))
        return reports

    def delete_slot_report(self, path: str) -> None:
        """Delete a report :meth:`slot_reports` returned, once its batch's entry is written."""
        fs, _ = self._where.child(SLOT_METRICS_DIR).open(create=True)
        with contextlib.suppress(OSError):
            delete_if_present(fs, path)

    def _known(self) -> list[int]:
        if self._present is None:
            self._present = self.sequences()
        return self._present
