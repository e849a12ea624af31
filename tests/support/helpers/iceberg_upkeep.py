"""Upkeep of a pipeline's Iceberg table while it writes: a compaction after every commit the
upkeep did not make itself, and an expiry of every snapshot older than now (pyiceberg's
``expire_snapshots``, which keeps the current one and every tagged one), in a thread of its own.

pyiceberg 0.12 has no ``rewrite_data_files``, so a compaction here is what one does to the
table: the rows of the current snapshot written again as one file in an overwrite that replaces
every data file, committed only onto the snapshot it read (as Spark's rewrite validates its
starting snapshot); a compaction that another writer beats is counted and tried again on the
next turn, as a maintenance job would.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from pyiceberg.exceptions import CommitFailedException

from helpers.processes import wait_until
from kafka_share_eos.iceberg.tables import load_table, without_rebase

# How often the loop looks whether the table has a commit it did not make: a poll of a
# condition, not a wait for anything to happen.
_POLL_SECONDS = 0.01
COMPACTION = "compaction"
"""The summary property each compaction's snapshot carries (no toolkit property)."""


@dataclass
class IcebergUpkeep:
    """Compacts the table after each commit it did not make, and expires every snapshot older
    than now after each compaction, until :meth:`finish`; any error but a lost commit race is
    raised by :meth:`finish`."""

    catalog: Any
    identifier: str
    compactions: int = 0
    expiries: int = 0
    lost_races: int = 0
    _own: set[int] = field(default_factory=set)
    _settled: int | None = None
    _done: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _errors: list[BaseException] = field(default_factory=list)

    def __enter__(self) -> IcebergUpkeep:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=60)

    def finish(self) -> None:
        """Stop the loop and raise what failed in it."""
        self.__exit__(None, None, None)
        assert self._thread is not None and not self._thread.is_alive(), "the loop did not stop"
        if self._errors:
            raise self._errors[0]

    def wait_caught_up(self, timeout: float = 60) -> None:
        """Return once the table's current snapshot is a compaction of this upkeep, with the
        snapshots older than it expired."""
        wait_until(lambda: self._errors or self._current() == self._settled, timeout,
                   f"a compaction and expiry of {self.identifier} after its newest commit")

    def _current(self) -> int | None:
        table = load_table(self.catalog, self.identifier)
        snapshot = None if table is None else table.current_snapshot()
        return None if snapshot is None else snapshot.snapshot_id

    def _run(self) -> None:
        try:
            while not self._done.wait(_POLL_SECONDS):
                current = self._current()
                if current is not None and current not in self._own:
                    self._compact()
        except BaseException as error:
            self._errors.append(error)

    def _compact(self) -> None:
        table = load_table(self.catalog, self.identifier)
        assert table is not None
        transaction = without_rebase(table).transaction()
        transaction.overwrite(table.scan().to_arrow(), snapshot_properties={COMPACTION: "1"})
        try:
            # The table as the commit left it: its current snapshot is the compaction's.
            compacted = transaction.commit_transaction()
            snapshot = compacted.current_snapshot()
            assert snapshot is not None
            self.compactions += 1
            self._own.update(s.snapshot_id for s in compacted.snapshots()
                             if s.summary is not None
                             and s.summary.additional_properties.get(COMPACTION) == "1")
            compacted.maintenance.expire_snapshots().older_than(datetime.now(UTC)).commit()
            self.expiries += 1
            self._settled = snapshot.snapshot_id
        except CommitFailedException:
            self.lost_races += 1
