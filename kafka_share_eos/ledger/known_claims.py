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

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos._libs import deltalake
from kafka_share_eos.ledger.rows import (
    file_highest_offsets,
    highest_offsets,
    rows_where,
)

_KEYS = ["topic", "partition", "offset"]


# Identities packed into one int64 per topic: partition above bit 44, offset below (offsets up
# to 1.7e13, partitions up to 2**19); a batch beyond that is read.
_OFFSET_BITS = 44
_PARTITION_LIMIT = 1 << (63 - _OFFSET_BITS)


@dataclass
class KnownClaims:
    """The highest claimed offset per ``(topic, partition)`` and the identities of this
    process's last claim (packed per topic), both exact at ledger version ``version`` (None:
    nothing known)."""

    version: int | None = None
    highest: dict[tuple[str, int], int] = field(default_factory=dict)
    last: dict[str, pa.Array] | None = None
    last_owner: tuple[str, int] | None = None

    def split(
        self, table: deltalake.DeltaTable, batch: pa.Table, app_id: str, batch_id: int
    ) -> tuple[pa.Table, pa.Table] | None:
        """The identities batch ``batch_id`` of ``app_id`` claimed in an earlier attempt, and
        the rows of ``batch`` nobody claimed, as of ``table``'s snapshot; None when only a read
        of the ledger can tell."""
        if table.version() != self.version and not self._learn(table):
            return None
        keys = batch.select(_KEYS)
        if keys.num_rows == 0:
            return keys, batch
        below = pc.less_equal(keys["offset"], self._tops(keys))
        if not pc.any(below).as_py():
            return keys.slice(0, 0), batch
        rest = keys.filter(below)
        if not self._all_in_last(rest):
            return None
        own = rest if self.last_owner == (app_id, batch_id) else rest.slice(0, 0)
        return own, rows_where(batch, pc.invert(below))

    def claimed(
        self, table: deltalake.DeltaTable, rows: pa.Table, app_id: str, batch_id: int
    ) -> None:
        """Take in the claims of ``rows`` that batch ``batch_id`` of ``app_id`` just committed
        through ``table`` (which delta-rs left at that commit's version)."""
        committed = table.version()
        keys = rows.select(_KEYS)
        last = _packed(keys)
        if self.version != committed - 1 or last is None:
            # What was known is not the snapshot this claim landed on, or cannot be packed.
            self.version = None
            return
        self.highest.update(
            (pair, max(top, self.highest.get(pair, -1)))
            for pair, top in highest_offsets(keys).items()
        )
        self.version, self.last, self.last_owner = committed, last, (app_id, batch_id)

    def _tops(self, keys: pa.Table) -> pa.ChunkedArray:
        """Each row's partition's highest claimed offset; -1 where the ledger holds none."""
        topic, partition = keys["topic"], keys["partition"]
        tops: pa.ChunkedArray | None = None
        for name in pc.unique(topic).to_pylist():
            numbers = [p for t, p in self.highest if t == name]
            of_topic = pa.array([*(self.highest[(name, p)] for p in numbers), -1], pa.int64())
            where = pc.index_in(partition, value_set=pa.array(numbers, partition.type))
            found = pc.take(of_topic, pc.fill_null(where, len(numbers)))
            tops = found if tops is None else pc.if_else(pc.equal(topic, name), found, tops)
        assert tops is not None
        return tops

    def _all_in_last(self, rest: pa.Table) -> bool:
        """Whether every identity of ``rest`` is one of the last claim's."""
        packed = _packed(rest)
        if self.last is None or packed is None:
            return False
        return all(
            name in self.last and pc.all(pc.is_in(codes, value_set=self.last[name])).as_py()
            for name, codes in packed.items()
        )

    def _learn(self, table: deltalake.DeltaTable) -> bool:
        """Read the highest offsets from the log's file statistics; False when a file has none."""
        actions = pa.table(table.get_add_actions(flatten=True))
        self.version, self.last, self.last_owner = None, None, None
        self.highest = {}
        if actions.num_rows:
            # A file without the statistic could hold any offset: nothing is known.
            names = {"partition.topic", "partition.partition", "max.offset"}
            if not names <= set(actions.column_names) or actions["max.offset"].null_count:
                return False
            self.highest = file_highest_offsets(actions)
        self.version = table.version()
        return True


def _packed(keys: pa.Table) -> dict[str, pa.Array] | None:
    """Per topic, its rows' partition and offset packed into one int64 each; None when one
    does not fit."""
    partition, offset = keys["partition"], keys["offset"]
    bounds = pc.min_max(offset).as_py(), pc.min_max(partition).as_py()
    if bounds[0]["min"] < 0 or bounds[0]["max"] >= 1 << _OFFSET_BITS or (
        bounds[1]["min"] < 0 or bounds[1]["max"] >= _PARTITION_LIMIT
    ):
        return None
    codes = pc.add(pc.shift_left(partition.cast(pa.int64()), _OFFSET_BITS), offset)
    topics = pc.unique(keys["topic"]).to_pylist()
    if len(topics) == 1:
        return {topics[0]: codes.combine_chunks()}
    return {name: pc.filter(codes, pc.equal(keys["topic"], name)).combine_chunks()
            for name in topics}
