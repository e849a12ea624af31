"""A deliberately unsafe ``foreachBatch`` target: an increment with no deduplication at all.

It exists so the verifier can be seen to fail: under a crash after its write (Spark replays the
batch) or a redelivery it applies records twice, and the verifier must report duplicates.
"""

from __future__ import annotations

import time
from typing import Any

from kafka_share_eos import faults
from kafka_share_eos._libs import sa
from kafka_share_eos.strategies import BatchReport, as_arrow


class UnsafeIncrementSink:
    """Runs ``statement`` once per row of every batch it is given, in one transaction per batch.

    Crash points ``sink.mid_write`` (half the rows executed, not committed) and
    ``strategy.after_write`` (committed, before ``foreachBatch`` returns) are honoured.
    """

    name = "UnsafeIncrementSink"

    def __init__(self, url: str, statement: str) -> None:
        self._engine = sa.create_engine(url)
        self._statement = sa.text(statement)

    def __call__(self, batch_df: Any, batch_id: int) -> BatchReport:
        """The ``foreachBatch`` entry point."""
        return self.apply(batch_df.toArrow(), batch_id)

    def apply(self, data: Any, batch_id: int) -> BatchReport:
        """Apply every row of the batch, duplicates included."""
        started = time.perf_counter()
        rows = as_arrow(data).select(["id", "amount"]).to_pylist()
        half = len(rows) // 2
        with self._engine.begin() as conn:
            if rows[:half]:
                conn.execute(self._statement, rows[:half])
            faults.maybe_crash(faults.SINK_MID_WRITE)
            if rows[half:]:
                conn.execute(self._statement, rows[half:])
        faults.maybe_crash(faults.STRATEGY_AFTER_WRITE)
        return BatchReport(
            batch_id, len(rows), 0, 0, len(rows), "unsafe", time.perf_counter() - started
        )

    def close(self) -> None:
        """Release the database connections."""
        self._engine.dispose()

