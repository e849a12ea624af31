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

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from deltalake import DeltaTable

_KEYS = ["topic", "partition", "offset"]


@dataclass
class KnownClaims:
    """The highest claimed offset per ``(topic, partition)`` and the offsets of this process's
    last claim, both exact at ledger version ``version`` (None: nothing known)."""

    version: int | None = None
    highest: dict[tuple[str, int], int] = field(default_factory=dict)
    last: dict[tuple[str, int], pa.Array] | None = None
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
        below = pa.array([False] * keys.num_rows)
        for pair, offsets, here in _by_partition(keys):
            top = self.highest.get(pair)
            if top is None or pc.min(offsets).as_py() > top:
                continue  # none of the partition's rows can be claimed
            if not self._in_last(pair, pc.filter(offsets, pc.less_equal(offsets, top))):
                return None
            below = pc.or_(below, pc.and_(here, pc.less_equal(keys["offset"], top)))
        if not pc.any(below).as_py():
            return keys.slice(0, 0), batch
        rest = keys.filter(below)
        own = rest if self.last_owner == (app_id, batch_id) else rest.slice(0, 0)
        return own, batch.filter(pc.invert(below))

    def claimed(self, table: DeltaTable, rows: pa.Table, app_id: str, batch_id: int) -> None:
        """Take in the claims of ``rows`` that batch ``batch_id`` of ``app_id`` just committed
        through ``table`` (which delta-rs left at that commit's version)."""
        committed = table.version()
        if self.version != committed - 1:
            # What was known is not the snapshot this claim landed on.
            self.version = None
            return
        self.last = {}
        for pair, offsets, _ in _by_partition(rows.select(_KEYS)):
            self.highest[pair] = max(pc.max(offsets).as_py(), self.highest.get(pair, -1))
            self.last[pair] = offsets
        self.version, self.last_owner = committed, (app_id, batch_id)

    def _in_last(self, pair: tuple[str, int], offsets: pa.Array) -> bool:
        last = self.last.get(pair) if self.last is not None else None
        return last is not None and bool(pc.all(pc.is_in(offsets, value_set=last)).as_py())

    def _learn(self, table: DeltaTable) -> bool:
        """Read the highest offsets from the log's file statistics; False when a file has none."""
        actions = pa.table(table.get_add_actions(flatten=True))
        self.version, self.last, self.last_owner = None, None, None
        self.highest = {}
        if actions.num_rows:
            names = ("partition.topic", "partition.partition", "max.offset")
            if not set(names) <= set(actions.column_names) or actions["max.offset"].null_count:
                return False
            tops = actions.select(list(names)).rename_columns(_KEYS).cast(
                pa.schema([("topic", pa.string()), ("partition", pa.int64()),
                           ("offset", pa.int64())])
            )
            self.highest = {pair: pc.max(offsets).as_py()
                            for pair, offsets, _ in _by_partition(tops)}
        self.version = table.version()
        return True


def _by_partition(keys: pa.Table) -> Iterator[tuple[tuple[str, int], pa.Array, pa.Array]]:
    """Each ``(topic, partition)`` of ``keys`` with its offsets and the mask of its rows."""
    topic, partition, offset = (keys.column(c) for c in _KEYS)
    for name in pc.unique(topic).to_pylist():
        of_topic = pc.equal(topic, name)
        for number in pc.unique(pc.filter(partition, of_topic)).to_pylist():
            here = pc.and_(of_topic, pc.equal(partition, number))
            yield (str(name), int(number)), pc.filter(offset, here).combine_chunks(), here
