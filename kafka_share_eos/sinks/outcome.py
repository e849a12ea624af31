"""What a writer reports back for one batch, and the interface every upsert writer offers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

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

    Optional methods the strategies use when present: ``check(rows)`` raises what writing
    ``rows`` would, without writing (so refused rows can be dead-lettered), and
    ``applied(keys) -> list[bool]`` says which key rows the target holds (so a record back at
    the delivery limit after it was applied is not dead-lettered).
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
