"""Spark's progress events, next to the toolkit's figures of the same micro-batch.

A PySpark ``StreamingQueryListener`` runs in the driver's Python process: Spark calls
``onQueryProgress`` once per micro-batch, after the batch, with its ``batchId``,
``numInputRows`` and ``durationMs``. The listener hands them to the pipeline of the same query
name, which exports them beside the source's and the strategy's figures, and logs one line that
puts Spark's numbers next to the strategy's report of that batch. (PySpark 4.3's Python data
source cannot add its own figures to the progress itself: docs/operations.md, "Metrics".)
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from kafka_share_eos._extras import SPARK
from kafka_share_eos.monitoring.watched_pipeline import PipelineMetrics

with SPARK.needed_by("the Prometheus metrics' Spark listener"):
    from pyspark.sql.streaming.listener import StreamingQueryListener

log = logging.getLogger("kafka_share_eos.monitoring")


class ProgressListener(StreamingQueryListener):
    """Counts each progress event of the queries named like one of ``pipelines``."""

    def __init__(self, pipelines: Sequence[PipelineMetrics]) -> None:
        self._by_query = {pipeline.query: pipeline for pipeline in pipelines}

    def onQueryStarted(self, event: Any) -> None:
        """Nothing to count before a batch ran."""

    def onQueryIdle(self, event: Any) -> None:
        """An idle trigger ran no batch."""

    def onQueryTerminated(self, event: Any) -> None:
        """The counts stay as they are, for the last scrapes."""

    def onQueryProgress(self, event: Any) -> None:
        """Count one micro-batch of a watched query."""
        progress = event.progress
        pipeline = self._by_query.get(progress.name)
        if pipeline is None:
            return
        with pipeline.lock:
            pipeline.spark.add(progress.batchId, progress.numInputRows, progress.durationMs,
                               progress.processedRowsPerSecond)
        log.info("%s batch %d: Spark read %d rows in %s ms; %s", pipeline.query,
                 progress.batchId, progress.numInputRows,
                 progress.durationMs.get("triggerExecution"), _report_of(pipeline,
                                                                         progress.batchId))


def _report_of(pipeline: PipelineMetrics, batch_id: int) -> str:
    if pipeline.reports is None:
        return "no strategy watched"
    strategy = pipeline.reports.strategy
    for report in reversed(strategy.reports):
        if report.batch_id == batch_id:
            return report.log_line(strategy.name)
    return f"{strategy.name} reported no batch {batch_id}"
