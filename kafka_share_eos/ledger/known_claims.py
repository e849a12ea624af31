"""What this process knows a record ledger holds, so that most batches claim without reading it.

A stream's batch is mostly records delivered for the first time, whose offsets lie above every
offset the ledger holds in their partition, plus redeliveries of records the previous batch
held (their acknowledgements were lost). While the ledger is still at the version this process's
own last claim produced, both kinds are told apart without a read: the highest claimed offset
of each partition and that last claim are known exactly at that version. A batch holding any
other identity, or a ledger another writer or a maintenance run has changed since, is read as
before. Nothing else changes: the claim's commit still lands only on the snapshot it was decided
on, so a writer that got in meanwhile makes it fail and the next attempt reads the ledger.

The highest offsets are learnt from the Delta log's file statistics (no data read) whenever the
ledger's version is not the one known; pruning only lowers what the ledger holds, so they stay an
upper bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos.sinks.dedup import contained

if TYPE_CHECKING:
    from deltalake import DeltaTable

_KEYS = ["topic", "partition", "offset"]


@dataclass
class KnownClaims:
    """The highest claimed offset per ``(topic, partition)`` and this process's last claim, both
    exact at ledger version ``version`` (None: nothing known)."""

    version: int | None = None
    highest: dict[tuple[str, int], int] = field(default_factory=dict)
    last: pa.Table | None = None
    last_owner: tuple[str, int] | None = None

    def split(
        self, table: DeltaTable, batch: pa.Table, app_id: str, batch_id: int
    ) -> tuple[pa.Table, pa.Table] | None:
        """The identities batch ``batch_id`` of ``app_id`` claimed in an earlier attempt, and
        the rows of ``batch`` nobody claimed, as of ``table``'s snapshot; None when only a read
        of the ledger can tell."""
        if table.version() != self.version and not self._learn(table):
            return None
        keys = batch.select(_KEYS)
        above = self._above(keys)
        if pc.all(above).as_py():
            return keys.slice(0, 0), batch
        rest = keys.filter(pc.invert(above))
        if self.last is None or not all(contained(rest, self.last)):
            return None
        own = rest if self.last_owner == (app_id, batch_id) else rest.slice(0, 0)
        return own, batch.filter(above)

    def claimed(self, table: DeltaTable, rows: pa.Table, app_id: str, batch_id: int) -> None:
        """Take in the claims of ``rows`` that batch ``batch_id`` of ``app_id`` just committed
        through ``table`` (which delta-rs left at that commit's version)."""
        committed = table.version()
        if self.version != committed - 1:
            # What was known is not the snapshot this claim landed on.
            self.version = None
            return
        keys = rows.select(_KEYS)
        for (topic, partition), top in _highest(keys).items():
            self.highest[(topic, partition)] = max(top, self.highest.get((topic, partition), -1))
        self.version, self.last, self.last_owner = committed, keys, (app_id, batch_id)

    def _learn(self, table: DeltaTable) -> bool:
        """Read the highest offsets from the log's file statistics; False when a file has none."""
        actions = pa.table(table.get_add_actions(flatten=True))
        self.version, self.last, self.last_owner = None, None, None
        if actions.num_rows == 0:
            self.highest = {}
        else:
            names = ("partition.topic", "partition.partition", "max.offset")
            if not set(names) <= set(actions.column_names) or actions["max.offset"].null_count:
                return False
            tops = actions.select(list(names)).rename_columns(_KEYS).cast(
                pa.schema([("topic", pa.string()), ("partition", pa.int64()),
                           ("offset", pa.int64())])
            )
            self.highest = _highest(tops)
        self.version = table.version()
        return True

    def _above(self, keys: pa.Table) -> pa.Array:
        """For each row, whether its offset lies above every claim in its partition."""
        above = pa.array([True] * keys.num_rows)
        topic, partition, offset = (keys.column(c) for c in _KEYS)
        for (name, number), top in self.highest.items():
            here = pc.and_(pc.equal(topic, name), pc.equal(partition, number))
            above = pc.and_(above, pc.or_(pc.invert(here), pc.greater(offset, top)))
        return above.combine_chunks() if isinstance(above, pa.ChunkedArray) else above


def _highest(keys: pa.Table) -> dict[tuple[str, int], int]:
    """The highest offset of each ``(topic, partition)`` in ``keys``."""
    grouped = keys.group_by(["topic", "partition"], use_threads=False).aggregate(
        [("offset", "max")]
    )
    return {
        (str(t), int(p)): int(o)
        for t, p, o in zip(grouped["topic"].to_pylist(), grouped["partition"].to_pylist(),
                           grouped["offset_max"].to_pylist(), strict=True)
    }
