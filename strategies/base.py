"""The shape every strategy shares: a ``foreachBatch`` callable with a Spark-free entry point.

``strategy(batch_df, batch_id)`` is what ``writeStream.foreachBatch(strategy)`` calls; it hands
the batch to :meth:`BatchStrategy.apply` as Arrow. ``apply(table, batch_id)`` takes an Arrow
table, record batch or pandas frame, so a strategy runs and is tested without Spark. On its
first batch a strategy checks that the identity columns exist; every batch is deduplicated on
the identity before anything is written, and yields one :class:`BatchReport`.
"""

from __future__ import annotations

import sys
import time
from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos import faults
from kafka_share_eos.sinks import UpsertOutcome

from .identity import RecordIdentity
from .report import BatchReport, ReportLog, ReportTotals

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def as_arrow(data: Any) -> pa.Table:
    """An Arrow table from an Arrow table or record batch, or a pandas DataFrame."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(data, pandas.DataFrame):
        return pa.Table.from_pandas(data, preserve_index=False)
    raise TypeError(
        f"a batch must be a pyarrow Table or RecordBatch or a pandas DataFrame, "
        f"not {type(data).__name__}"
    )


class BatchStrategy(ABC):
    """Base of the ``foreachBatch`` strategies.

    Subclasses implement :meth:`_prepare` (check or create the target for the batch schema, once)
    and :meth:`_write` (apply rows that are unique on the identity, report what changed).
    """

    def __init__(self, identity: RecordIdentity, name: str, keep_reports: int = 1000) -> None:
        self.identity = identity
        self.name = name
        self._log = ReportLog(keep_reports)
        self._ready = False

    def __call__(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """The ``foreachBatch`` entry point."""
        return self.apply_dataframe(batch_df, batch_id)

    def apply_dataframe(self, batch_df: DataFrame, batch_id: int) -> BatchReport:
        """Apply a Spark DataFrame; by default it is collected to the driver as Arrow."""
        return self.apply(batch_df.toArrow(), batch_id)

    def apply(self, data: Any, batch_id: int) -> BatchReport:
        """Deduplicate and apply one batch (Arrow table/record batch or pandas DataFrame)."""
        started = time.perf_counter()
        table = as_arrow(data)
        self._ensure_ready(table.schema)
        unique = self.identity.unique_rows(table, batch_id)
        outcome = self._write(unique, batch_id)
        return self._record(
            batch_id, table.num_rows, table.num_rows - unique.num_rows, outcome, started
        )

    @property
    def reports(self) -> tuple[BatchReport, ...]:
        """Reports of the latest batches (bounded), oldest first."""
        return self._log.reports

    @property
    def last_report(self) -> BatchReport | None:
        """The report of the latest batch, if any."""
        return self._log.last

    @property
    def totals(self) -> ReportTotals:
        """Sums over every batch this object handled."""
        return self._log.totals

    def _ensure_ready(self, schema: pa.Schema) -> None:
        if not self._ready:
            self.identity.check_columns(schema.names, f"the batch given to {self.name}")
            self._prepare(schema)
            self._ready = True

    def _record(
        self,
        batch_id: int,
        rows_in: int,
        duplicates_in_batch: int,
        outcome: UpsertOutcome,
        started: float,
    ) -> BatchReport:
        # Every write path reports through here once the sink has committed.
        faults.maybe_crash(faults.STRATEGY_AFTER_WRITE)
        report = BatchReport(
            batch_id=batch_id,
            rows_in=rows_in,
            duplicates_in_batch=duplicates_in_batch,
            already_applied=outcome.already_applied,
            rows_written=outcome.written,
            write_path=outcome.path,
            seconds=time.perf_counter() - started,
        )
        self._log.add(self.name, report)
        return report

    @abstractmethod
    def _prepare(self, schema: pa.Schema) -> None:
        """Check or create the target for batches of ``schema``; runs once, before any write."""

    @abstractmethod
    def _write(self, table: pa.Table, batch_id: int) -> UpsertOutcome:
        """Apply ``table`` (unique on the identity) as batch ``batch_id``."""
