"""Maintenance on a Delta table while a pipeline writes it: OPTIMIZE, VACUUM with no retention
and another writer's appends, each looping in a thread of its own until it is told to stop.

Used by the ``delta-maintenance`` fault of the verifier and by the tests of the strategies under
maintenance. Local tables only: a loop watches the table's log directory for new versions.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError

# How often a loop looks whether it has something to do: a poll of a condition, not a wait
# for anything to happen.
_POLL_SECONDS = 0.01


def latest_version(uri: str) -> int:
    """The table's latest version from its log's file names (-1 while there is no table): a
    directory listing, cheap enough to poll."""
    try:
        names = os.listdir(os.path.join(uri, "_delta_log"))
    except FileNotFoundError:
        return -1
    versions = [int(name[:20]) for name in names if name.endswith(".json") and name[:20].isdigit()]
    return max(versions, default=-1)


@dataclass
class Maintenance:
    """OPTIMIZE after every commit it did not make itself, VACUUM with no retention after every
    compaction that replaced files, and, with ``foreign``, an append of ``foreign(n)`` (the n-th
    foreign batch) each time ``progress()`` (the pipeline's batches done) grows; until
    :meth:`finish`. Lost commit races of the maintenance itself are counted, as a job would
    log them; any other error of a loop is raised by :meth:`finish`."""

    uri: str
    foreign: Callable[[int], pa.Table] | None = None
    progress: Callable[[], int] = lambda: 0
    compactions: int = 0
    vacuums: int = 0
    foreign_rows: list[pa.Table] = field(default_factory=list)
    lost_races: int = 0
    _compacted_at: int = -1
    _vacuumed_after: int = 0
    _done: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)
    _errors: list[BaseException] = field(default_factory=list)

    def __enter__(self) -> Maintenance:
        loops = [self._compact, self._vacuum, *([self._append] if self.foreign else [])]
        self._threads = [threading.Thread(target=self._run, args=(loop,), daemon=True)
                         for loop in loops]
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self._done.set()
        for thread in self._threads:
            thread.join(timeout=60)

    def finish(self) -> None:
        """Stop the loops (the pipeline is done) and raise what failed in one.

        Raises:
            AssertionError: a loop did not stop within a minute.
        """
        self.__exit__(None, None, None)
        assert not any(thread.is_alive() for thread in self._threads), "a loop did not stop"
        if self._errors:
            raise self._errors[0]

    def _run(self, loop: Callable[[], None]) -> None:
        while not self._done.is_set():
            try:
                loop()
            except CommitFailedError:
                self.lost_races += 1
            except BaseException as error:  # handed to finish()
                self._errors.append(error)
                return

    def _wait(self, ready: Callable[[], bool]) -> bool:
        """Whether ``ready()`` came true before the pipeline finished."""
        while not ready():
            if self._done.wait(_POLL_SECONDS):
                return False
        return True

    def _compact(self) -> None:
        seen = self._compacted_at
        if not self._wait(lambda: latest_version(self.uri) > seen):
            return
        metrics = DeltaTable(self.uri).optimize.compact()
        self._compacted_at = latest_version(self.uri)
        if int(metrics["numFilesRemoved"]):
            self.compactions += 1

    def _vacuum(self) -> None:
        seen = self._vacuumed_after
        if not self._wait(lambda: self.compactions > seen):
            return
        compacted = self.compactions
        DeltaTable(self.uri).vacuum(
            retention_hours=0, enforce_retention_duration=False, dry_run=False
        )
        self.vacuums += 1
        self._vacuumed_after = compacted

    def _append(self) -> None:
        assert self.foreign is not None
        done = len(self.foreign_rows)
        if not self._wait(lambda: self.progress() > done and latest_version(self.uri) >= 0):
            return
        rows = self.foreign(done)
        write_deltalake(self.uri, rows, mode="append")
        self.foreign_rows.append(rows)

    @property
    def vacuumed_files(self) -> int:
        """Data files the vacuums deleted (delta-rs lists every tombstone it knows, deleted
        before or not; its history counts what each run deleted)."""
        return sum(int(h.get("operationMetrics", {}).get("numDeletedFiles", 0))
                   for h in DeltaTable(self.uri).history() if h["operation"] == "VACUUM END")

    @property
    def foreign_table(self) -> pa.Table | None:
        """Every foreign row appended, None when there was none."""
        return pa.concat_tables(self.foreign_rows) if self.foreign_rows else None
