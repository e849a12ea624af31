"""Spark's progress events, next to the toolkit's figures of the same micro-batch.

A PySpark ``StreamingQueryListener`` runs in the driver's Python process: Spark calls
``onQueryProgress`` once per micro-batch, after the batch, with its ``batchId``,
``numInputRows`` and ``durationMs``. The listener hands them to the pipeline of the same query
name, which exports them beside the source's and the strategy's figures, and logs one line that
puts Spark's numbers next to the strategy's report of that batch. (PySpark 4.3's Python data
source cannot add its own figures to the progress itself: docs/operations.md, "Metrics".)

PySpark hands a classic session's events to a Python listener by reading every field of the
Java progress object over Py4J, which took 125 ms per micro-batch of the benchmark's pipeline
(20 events, 2.5 s) in the driver's Python process, beside ``foreachBatch``: the listener here
takes each event as the one JSON string Spark writes of it instead (a Py4J call and a parse),
the way Spark Connect delivers them.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

from kafka_share_eos._extras import SPARK
from kafka_share_eos.monitoring.watched_pipeline import PipelineMetrics

with SPARK.needed_by("the Prometheus metrics' Spark listener"):
    from pyspark.sql.streaming.listener import (
        QueryIdleEvent,
        QueryProgressEvent,
        QueryStartedEvent,
        QueryTerminatedEvent,
        StreamingQueryListener,
    )

log = logging.getLogger("kafka_share_eos.monitoring")


class ProgressListener(StreamingQueryListener):
    """Counts each progress event of the queries named like one of ``pipelines``."""

    def __init__(self, pipelines: Sequence[PipelineMetrics]) -> None:
        self._by_query = {pipeline.query: pipeline for pipeline in pipelines}
        self._java_listener: Any = None

    @property
    def _jlistener(self) -> Any:
        """The JVM side PySpark registers for this listener (see the module: events as JSON)."""
        from pyspark import SparkContext

        if self._java_listener is None:
            jvm: Any = SparkContext._jvm
            self._java_listener = jvm.PythonStreamingQueryListenerWrapper(_JsonEvents(self))
        return self._java_listener

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


class _JsonEvents:
    """Spark's ``PythonStreamingQueryListener`` interface, implemented over Py4J: each event
    read as its JSON and handed to ``listener`` as PySpark's event of it."""

    def __init__(self, listener: StreamingQueryListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        self._listener.onQueryStarted(_parsed(QueryStartedEvent.fromJson, jevent))

    def onQueryProgress(self, jevent: Any) -> None:
        self._listener.onQueryProgress(_parsed(QueryProgressEvent.fromJson, jevent))

    def onQueryIdle(self, jevent: Any) -> None:
        self._listener.onQueryIdle(_parsed(QueryIdleEvent.fromJson, jevent))

    def onQueryTerminated(self, jevent: Any) -> None:
        self._listener.onQueryTerminated(_parsed(QueryTerminatedEvent.fromJson, jevent))

    class Java:
        implements: ClassVar[list[str]] = [
            "org.apache.spark.sql.streaming.PythonStreamingQueryListener"]


def _parsed(from_json: Callable[[dict[str, Any]], Any], jevent: Any) -> Any:
    return from_json(json.loads(jevent.json()))


def _report_of(pipeline: PipelineMetrics, batch_id: int) -> str:
    if pipeline.reports is None:
        return "no strategy watched"
    strategy = pipeline.reports.strategy
    if pipeline.reports.session is not None:
        return f"{strategy.name} applies its batches on the Spark Connect server"
    for report in reversed(strategy.reports):
        if report.batch_id == batch_id:
            return report.log_line(strategy.name)
    return f"{strategy.name} reported no batch {batch_id}"
