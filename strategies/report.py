"""Per-batch reports of a strategy and their running totals."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections import deque
from dataclasses import asdict, dataclass, fields
from pathlib import Path

logger = logging.getLogger("kafka_share_eos.strategies")


@dataclass(frozen=True)
class BatchReport:
    """What one strategy did with one micro-batch.

    ``rows_in = dead_lettered + duplicates_in_batch + already_applied + rows_written`` always
    holds: ``dead_lettered`` rows went to the dead-letter sink instead of the target,
    ``duplicates_in_batch`` rows repeated an identity earlier in the same batch (removed before
    writing), ``already_applied`` rows were found applied by an earlier batch or an earlier run
    of this one (or were older than the stored version), ``rows_written`` changed the target.
    """

    batch_id: int
    rows_in: int
    duplicates_in_batch: int
    already_applied: int
    rows_written: int
    write_path: str
    seconds: float
    dead_lettered: int = 0

    @property
    def duplicates(self) -> int:
        """All rows absorbed instead of written."""
        return self.duplicates_in_batch + self.already_applied

    def log_line(self, strategy: str) -> str:
        """The one line logged for this batch."""
        return (
            f"{strategy} batch {self.batch_id}: {self.rows_in} in, {self.duplicates_in_batch} "
            f"duplicate in batch, {self.already_applied} already applied, {self.rows_written} "
            f"written via {self.write_path}, {self.dead_lettered} dead-lettered in "
            f"{self.seconds:.3f}s"
        )


@dataclass(frozen=True)
class ReportTotals:
    """Sums over every batch a strategy object has handled."""

    batches: int = 0
    rows_in: int = 0
    duplicates_in_batch: int = 0
    already_applied: int = 0
    rows_written: int = 0
    dead_lettered: int = 0

    def plus(self, report: BatchReport) -> ReportTotals:
        """These totals with ``report`` added."""
        return ReportTotals(
            self.batches + 1,
            *(
                getattr(self, f.name) + getattr(report, f.name)
                for f in fields(self)
                if f.name != "batches"
            ),
        )


class ReportLog:
    """The latest reports (bounded, for long-running streams) and totals since creation;
    with a ``metrics_path``, every report is also appended to it as one JSON line. Metrics are
    not data: a file that cannot be written is reported once, as a warning, and the batch's
    effect stands."""

    def __init__(self, keep: int = 1000, metrics_path: str | None = None) -> None:
        self._reports: deque[BatchReport] = deque(maxlen=keep)
        self.totals = ReportTotals()
        self.metrics_path = None if metrics_path is None else Path(metrics_path)
        self._metrics_failed = False

    def add(self, strategy: str, report: BatchReport) -> None:
        """Keep, total, log and export ``report``."""
        self._reports.append(report)
        self.totals = self.totals.plus(report)
        logger.info(report.log_line(strategy))
        if self.metrics_path is not None:
            line = {
                "strategy": strategy,
                **asdict(report),
                "duplicates_absorbed": report.duplicates,
                "at": dt.datetime.now(dt.UTC).isoformat(),
            }
            try:
                self.metrics_path.parent.mkdir(parents=True, exist_ok=True)
                with self.metrics_path.open("a") as out:
                    out.write(json.dumps(line) + "\n")
            except OSError as error:
                if not self._metrics_failed:
                    self._metrics_failed = True
                    logger.warning("%s: cannot write the batch metrics to %s (%s); the batches "
                                   "are applied all the same", strategy, self.metrics_path, error)

    @property
    def reports(self) -> tuple[BatchReport, ...]:
        """The kept reports, oldest first."""
        return tuple(self._reports)

    @property
    def last(self) -> BatchReport | None:
        """The most recent report, if any batch ran."""
        return self._reports[-1] if self._reports else None
