"""One pipeline whose figures the exporter serves: its query name, source options and strategy,
and Spark's progress of the query."""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafka_share_eos.monitoring.histogram import Histogram
from kafka_share_eos.monitoring.journal_figures import JournalFigures
from kafka_share_eos.monitoring.log_end import LogEndOffsets
from kafka_share_eos.monitoring.report_figures import ReportFigures
from kafka_share_eos.monitoring.share_lag import ShareGroupLag
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.strategies.base import BatchStrategy

LABELS = ("query", "group", "topic")
"""The labels of every series a pipeline exports; a strategy's series add ``strategy``, a
partition's series ``partition`` (their ``topic`` then the partition's topic)."""


@dataclass
class SparkTotals:
    """Spark's own progress of the query (``numInputRows``, ``durationMs`` per stage), summed
    over the progress events the listener handed over, and the latest rate."""

    batches: int = 0
    input_rows: int = 0
    last_batch_id: int | None = None
    processed_rows_per_second: float | None = None
    stages: dict[str, Histogram] = field(default_factory=dict)

    def add(self, batch_id: int, input_rows: int, duration_ms: Mapping[str, int],
            rows_per_second: float | None) -> None:
        """Count one micro-batch's progress."""
        self.batches += 1
        self.input_rows += input_rows
        self.last_batch_id = batch_id
        self.processed_rows_per_second = rows_per_second
        for stage, ms in duration_ms.items():
            self.stages.setdefault(stage, Histogram()).observe(ms / 1000)


class PipelineMetrics:
    """What :func:`~kafka_share_eos.serve_metrics` exports for one streaming query.

    Args:
        query: the query's name, as given to ``writeStream.queryName``: the ``query`` label,
            and how Spark's progress events are matched to this pipeline.
        options: the ``kafka-share`` source's options, as given to ``readStream.options``:
            the journal holding the source's per-batch metrics (``journalPath``, ``storage.*``)
            and the ``group`` and ``topic`` labels (``kafka.share.group.id``, ``subscribe``;
            several topics are joined with commas).
        strategy: the ``foreachBatch`` strategy, whose batch reports are exported; None for a
            query that writes otherwise.
        lag_command: Kafka's ``kafka-share-groups.sh`` (with any option it needs to reach the
            cluster, e.g. ``--command-config``), run in the background at most every 30 s to
            export the share group's lag per share-partition; None exports no lag.
        log_ends: read the partitions' log-end offsets (a ``ListOffsets`` request to the
            brokers at most every 10 s, in the background) for the backlog figure.

    Raises:
        SourceOptionError: ``options`` are not valid options of the source (the message names
            the option).
    """

    def __init__(self, query: str, options: Mapping[str, str],
                 strategy: BatchStrategy | None = None, *,
                 lag_command: Sequence[str] | None = None, log_ends: bool = True) -> None:
        source = SourceOptions.parse(options)
        self.query = query
        self.labels = (query, source.group_id, ",".join(source.topics))
        self.strategy = "" if strategy is None else strategy.name
        """The ``strategy`` label of the strategy's series: its name."""
        self.journal = JournalFigures(source.journal)
        self.reports = None if strategy is None else ReportFigures(strategy)
        self.spark = SparkTotals()
        self.lag = None if lag_command is None else ShareGroupLag(
            lag_command, source.consumer_config["bootstrap.servers"], source.group_id)
        self.log_ends = LogEndOffsets(source.consumer_config, source.topics) if log_ends else None
        self.lock = threading.Lock()

    def refresh(self) -> None:
        """Bring the journal's and the strategy's figures up to date (at scrape time)."""
        with self.lock:
            self.journal.refresh()
            if self.reports is not None:
                self.reports.refresh()
            if self.lag is not None:
                self.lag.refresh()
            if self.log_ends is not None:
                self.log_ends.refresh()

    def __repr__(self) -> str:
        return f"PipelineMetrics(query={self.query!r})"
