"""Prometheus metrics of running pipelines, served from the driver, or in a Spark Connect
session from the client's process (extra ``metrics``).

:class:`PipelineMetrics` names one streaming query, its source options and its strategy;
:func:`serve_metrics` serves any number of them on one HTTP endpoint, read from the journal's
segments and per-batch metrics files (which carry the executors' consumers' figures too), the
strategies' batch reports, the brokers' log-end offsets and, given a Spark session, Spark's own
progress events.
"""

from kafka_share_eos.monitoring.exporter import MetricsServer, serve_metrics
from kafka_share_eos.monitoring.watched_pipeline import PipelineMetrics

__all__ = ["MetricsServer", "PipelineMetrics", "serve_metrics"]
