"""What a strategy reports per batch, and the state it keeps, read at scrape time.

A strategy keeps its latest :class:`~kafka_share_eos.strategies.BatchReport` objects; each
scrape takes the ones added since the previous scrape (by identity, so a batch run twice is
counted twice, as it ran twice). A checkpoint-dedup store's ledger size is read from the Delta
log only after a batch changed it; a two-phase coordinator's decisions in doubt are listed from
its decision log on every scrape (a decision stays there only while its batch is in flight, or
when a run died between its decision and its commits).

In a Spark Connect session the strategy's copy in the server's foreachBatch worker runs the
batches and the object here reports none: :meth:`ReportFigures.read_from` makes each scrape read
the totals that copy hands to the client's session instead
(:mod:`kafka_share_eos.strategies.session_reports`); the ledger and the decision log are read
from their storage by this object as before.
"""

from __future__ import annotations

import logging
from dataclasses import astuple, dataclass, field
from typing import Any

from kafka_share_eos.errors import KafkaShareEosError
from kafka_share_eos.ledger.stats import ledger_stats
from kafka_share_eos.monitoring.histogram import Histogram
from kafka_share_eos.strategies import BatchReport, CheckpointDedupStore, TwoPhaseCommitCoordinator
from kafka_share_eos.strategies.base import BatchStrategy
from kafka_share_eos.strategies.report import ReportTotals
from kafka_share_eos.strategies.session_reports import SessionReportsValue, read_session_reports

log = logging.getLogger("kafka_share_eos.monitoring")


@dataclass
class StrategyTotals:
    """Sums over the reports read so far, and the strategy's state."""

    batches: int = 0
    rows_in: int = 0
    rows_written: int = 0
    replays_absorbed: int = 0
    dead_letters: int = 0
    seconds: Histogram = field(default_factory=Histogram)
    ledger_rows: int | None = None
    decisions_in_doubt: int | None = None


class ReportFigures:
    """The figures of ``strategy``, brought up to date by :meth:`refresh`."""

    def __init__(self, strategy: BatchStrategy) -> None:
        self.strategy = strategy
        self._last: BatchReport | None = None
        self._ledger_read_at = -1
        self.totals = StrategyTotals()
        self.session: Any = None
        """The Spark Connect session the reports are read from (None: from the object)."""
        self._earlier = ReportTotals()
        self._latest: SessionReportsValue | None = None

    def read_from(self, session: Any) -> None:
        """Read the reports the strategy's copies hand to ``session``, a Spark Connect session,
        rather than the object's own."""
        self.session = session

    def refresh(self) -> None:
        """Count the reports added since the last refresh; read the ledger and decision log."""
        if self.session is None:
            self._count_kept_reports()
        else:
            self._count_session_reports()
        self._read_state()

    def _count_kept_reports(self) -> None:
        reports = self.strategy.reports
        start = 0
        for index in range(len(reports) - 1, -1, -1):
            if reports[index] is self._last:
                start = index + 1
                break
        for report in reports[start:]:
            self._add(report)
        if reports:
            self._last = reports[-1]

    def _count_session_reports(self) -> None:
        try:
            value = read_session_reports(self.session, self.strategy.report_key)
        except Exception:
            log.warning("could not read the reports of %s from the Spark Connect session",
                        self.strategy.name, exc_info=True)
            return
        if value is None:
            return
        latest, seen = self._latest, 0
        if latest is not None and value.totals.batches < latest.totals.batches:
            # The totals started again (a new server run): keep what was counted before.
            self._earlier = _summed(self._earlier, latest.totals)
        elif latest is not None:
            seen = latest.totals.batches
        new = value.totals.batches - seen
        for seconds in list(value.seconds)[max(0, len(value.seconds) - new):]:
            self.totals.seconds.observe(seconds)
        self._latest = value
        both = _summed(self._earlier, value.totals)
        totals = self.totals
        totals.batches, totals.rows_in, totals.rows_written = (
            both.batches, both.rows_in, both.rows_written)
        totals.replays_absorbed = both.duplicates_in_batch + both.already_applied
        totals.dead_letters = both.dead_lettered

    def _add(self, report: BatchReport) -> None:
        totals = self.totals
        totals.batches += 1
        totals.rows_in += report.rows_in
        totals.rows_written += report.rows_written
        totals.replays_absorbed += report.duplicates
        totals.dead_letters += report.dead_lettered
        totals.seconds.observe(report.seconds)

    def _read_state(self) -> None:
        strategy, totals = self.strategy, self.totals
        try:
            if isinstance(strategy, CheckpointDedupStore) and (
                self._ledger_read_at != totals.batches
            ):
                totals.ledger_rows = ledger_stats(strategy.ledger).rows
                self._ledger_read_at = totals.batches
            elif isinstance(strategy, TwoPhaseCommitCoordinator):
                transactions = strategy.transactions
                totals.decisions_in_doubt = len(transactions.log.txids(transactions.prefix))
        except (KafkaShareEosError, OSError):
            # A ledger not created before the first batch, or a log out of reach for a moment.
            log.debug("could not read the state of %s", strategy.name, exc_info=True)


def _summed(one: ReportTotals, other: ReportTotals) -> ReportTotals:
    return ReportTotals(*(a + b for a, b in zip(astuple(one), astuple(other), strict=True)))
