"""What a writer reports back for one batch, the interface every upsert writer offers, and the
capabilities a writer (or a two-phase participant) may declare beyond it.

A strategy finds a capability with ``isinstance`` against the protocols below: a writer of your
own takes part in what it implements, and nothing else is asked of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import pyarrow as pa


@dataclass(frozen=True)
class UpsertOutcome:
    """Result of writing one batch whose rows are unique on the key columns.

    ``written`` rows were inserted or replaced an older version; ``already_applied`` rows were
    left alone because the target already held that identity at the same or a newer version.
    ``path`` names the write path used (``rows``, ``copy``, ``merge``, ``skipped-batch``, ...).
    """

    written: int
    already_applied: int
    path: str


class UpsertWriter(Protocol):
    """An idempotent writer: applying the same rows again changes nothing.

    A writer may also be :class:`ChecksRows` or :class:`ChecksRowsInTurn` (so refused rows can
    be dead-lettered), :class:`KnowsApplied` (so a record back at the delivery limit after it was
    applied is not dead-lettered), :class:`FollowsStreamingQuery` and :class:`SqlTarget`.
    """

    @property
    def target(self) -> str:
        """A human-readable name of the target, for logs and errors."""
        ...

    def prepare(self, schema: pa.Schema) -> None:
        """Check (or create) the target for batches of ``schema``; runs before the first write."""
        ...

    def upsert(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """Write ``table`` (unique on the key columns) as batch ``batch_id``."""
        ...

    def close(self) -> None:
        """Release connections or other resources held between batches."""
        ...


@runtime_checkable
class ChecksRows(Protocol):
    """A writer that can tell, without writing, what writing some rows would raise."""

    def check(self, table: pa.Table) -> None:
        """Raise what writing ``table`` would (a constraint or type error); change nothing."""
        ...


class RowChecker(Protocol):
    """Checks of the parts of one batch, each meeting the parts checked before it."""

    def __call__(self, part: pa.Table) -> None:
        """Raise what writing ``part`` after the parts checked before would raise."""
        ...

    def close(self) -> None:
        """Forget every part checked."""
        ...


@runtime_checkable
class ChecksRowsInTurn(Protocol):
    """A writer whose checks build on each other: a row that conflicts with an earlier row of
    its batch fails on its own."""

    def checks(self) -> RowChecker:
        """Checks for the parts of one batch, given in row order."""
        ...


class OneByOne:
    """The :class:`RowChecker` of a writer that checks each part on its own."""

    def __init__(self, writer: ChecksRows) -> None:
        self._writer = writer

    def __call__(self, part: pa.Table) -> None:
        """Raise what writing ``part`` would raise."""
        self._writer.check(part)

    def close(self) -> None:
        """Nothing to forget: each part was checked on its own."""


@runtime_checkable
class KnowsApplied(Protocol):
    """A writer or participant that can say which records its target already holds."""

    def applied(self, keys: pa.Table) -> list[bool]:
        """For each row of ``keys`` (the identity columns), whether the target holds it."""
        ...


@runtime_checkable
class FollowsStreamingQuery(Protocol):
    """A writer whose bookkeeping is kept per streaming query (Delta application ids)."""

    def bind_streaming_query(self, query_id: str) -> None:
        """Keep the next batches' bookkeeping under the streaming query ``query_id``."""
        ...


class DataFrameCounts(Protocol):
    """What a writer of Spark DataFrames did with one batch."""

    rows_in: int
    duplicates_in_batch: int
    outcome: UpsertOutcome


@runtime_checkable
class WritesDataFrames(Protocol):
    """A writer that applies a Spark DataFrame itself, on the executors (delta-spark's MERGE)."""

    def upsert_dataframe(self, batch: Any, batch_id: int) -> DataFrameCounts:
        """Apply the Spark DataFrame ``batch`` as batch ``batch_id``."""
        ...


@runtime_checkable
class SqlTarget(Protocol):
    """A writer to a SQL database; PostgreSQL targets can be written from the executors."""

    dialect: str
