"""The Prometheus endpoint on the driver: :func:`serve_metrics`.

Nothing is counted between scrapes beyond Spark's progress events: each scrape reads what the
journal's metrics files and the strategies' reports added since the previous one (a directory
listing and a few small files per pipeline), so a pipeline pays for its metrics only when it is
scraped.

In a Spark Connect session the endpoint runs in the client's process, like the session: Spark's
progress events reach the client's listener over the session, the journal is read from its
shared storage, and the strategies' reports from the client's session, where their copies in
the server's foreachBatch worker hand them after each batch.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Self

from kafka_share_eos._extras import METRICS
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.monitoring import families
from kafka_share_eos.monitoring.watched_pipeline import PipelineMetrics

with METRICS.needed_by("Prometheus metrics"):
    import prometheus_client
    from prometheus_client.core import Metric
    from prometheus_client.registry import Collector, CollectorRegistry

if TYPE_CHECKING:
    from wsgiref.simple_server import WSGIServer

    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.listener import StreamingQueryListener

DEFAULT_PORT = 9464
"""The port :func:`serve_metrics` listens on unless told otherwise."""


class _PipelinesCollector(Collector):
    """One collector for every pipeline of the endpoint, so that each family is one series set
    whatever the number of pipelines."""

    def __init__(self, pipelines: Sequence[PipelineMetrics]) -> None:
        self._pipelines = tuple(pipelines)

    def describe(self) -> Iterable[Metric]:
        # Registering needs the names only: without this, the registry would collect (and read
        # every journal) at registration.
        return families.collect(())

    def collect(self) -> Iterable[Metric]:
        for pipeline in self._pipelines:
            pipeline.refresh()
        with contextlib.ExitStack() as locks:
            for pipeline in self._pipelines:
                locks.enter_context(pipeline.lock)
            return families.collect(self._pipelines)


class MetricsServer:
    """A running endpoint (what :func:`serve_metrics` returns); a context manager.

    Raises:
        OSError: ``port`` is taken on ``addr``.
        ValueError: a pipeline's series are in ``registry`` already (from an endpoint not
            closed).
    """

    def __init__(self, pipelines: Sequence[PipelineMetrics], port: int, addr: str,
                 registry: CollectorRegistry, spark: SparkSession | None) -> None:
        self.registry = registry
        self._collector = _PipelinesCollector(pipelines)
        registry.register(self._collector)
        self._listener: StreamingQueryListener | None = None
        self._spark = spark
        self._server: WSGIServer | None = None
        self.addr = addr
        try:
            if spark is not None:
                from kafka_share_eos.monitoring.progress_listener import ProgressListener

                if _is_connect(spark):
                    for pipeline in pipelines:
                        if pipeline.reports is not None:
                            pipeline.reports.read_from(spark)

                self._listener = ProgressListener(pipelines)
                spark.streams.addListener(self._listener)
            self._server, self._thread = prometheus_client.start_http_server(
                port, addr=addr, registry=registry)
        except BaseException:
            self.close()
            raise
        self.port: int = self._server.server_port
        """The port it listens on (the one chosen when ``port=0`` was asked)."""

    @property
    def url(self) -> str:
        """The URL Prometheus scrapes, ``http://<addr>:<port>/metrics``."""
        host = "127.0.0.1" if self.addr in ("", "0.0.0.0") else self.addr
        return f"http://{host}:{self.port}/metrics"

    def close(self) -> None:
        """Stop serving, unregister the pipelines and the Spark listener; safe to call twice."""
        server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()
        with contextlib.suppress(KeyError):
            self.registry.unregister(self._collector)
        if self._listener is not None and self._spark is not None:
            self._spark.streams.removeListener(self._listener)
            self._listener = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _is_connect(session: object) -> bool:
    return type(session).__module__.startswith("pyspark.sql.connect")


def serve_metrics(
    *pipelines: PipelineMetrics,
    port: int = DEFAULT_PORT,
    addr: str = "0.0.0.0",
    spark: SparkSession | None = None,
    registry: CollectorRegistry | None = None,
) -> MetricsServer:
    """Serve the pipelines' metrics in Prometheus's format on the driver (in a Spark Connect
    session: in the client's process).

    Args:
        pipelines: what to export, one :class:`PipelineMetrics` per streaming query.
        port: the HTTP port (0: a free one, see :attr:`MetricsServer.port`).
        addr: the address to listen on.
        spark: with a session, Spark's own progress of each query (``numInputRows``,
            ``durationMs`` per stage) is exported too, through a ``StreamingQueryListener``.
            A Spark Connect session is needed for the strategies' figures: their batches run
            on the server, which hands the reports to this session.
        registry: the ``prometheus_client`` registry to add the pipelines to and serve
            (default: ``prometheus_client.REGISTRY``, with the process's own metrics).

    Raises:
        ConfigurationError: no pipeline given, or two with the same query name.
        MissingExtraError: ``prometheus-client`` is not installed (extra ``metrics``).
        OSError: the port is taken.
        ValueError: the registry serves these metric names already (an endpoint not closed).
    """
    METRICS.require("serve_metrics")
    names = [pipeline.query for pipeline in pipelines]
    if not names:
        raise ConfigurationError("serve_metrics needs at least one PipelineMetrics")
    if len(set(names)) < len(names):
        raise ConfigurationError(f"pipelines must have distinct query names, got {names}")
    return MetricsServer(pipelines, port, addr,
                         prometheus_client.REGISTRY if registry is None else registry, spark)
