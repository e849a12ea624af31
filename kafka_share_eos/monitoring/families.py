"""The Prometheus metric families of the pipelines: names, help texts and where each value
comes from. docs/operations.md ("Prometheus") lists the same table for users."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from kafka_share_eos._extras import METRICS
from kafka_share_eos.monitoring.histogram import Histogram
from kafka_share_eos.monitoring.journal_figures import SourceTotals
from kafka_share_eos.monitoring.report_figures import StrategyTotals
from kafka_share_eos.monitoring.watched_pipeline import LABELS, PipelineMetrics

with METRICS.needed_by("Prometheus metrics"):
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        Metric,
    )

PREFIX = "kafka_share_eos_"

Value = float | int | None


@dataclass(frozen=True)
class Family:
    """One metric family: ``kind`` is counter, gauge or histogram; ``read`` gives the value of
    one pipeline, or values per ``extra`` label."""

    name: str
    kind: str
    help: str
    read: Callable[[PipelineMetrics], object]
    extra: str | None = None

    def build(self, pipelines: Sequence[PipelineMetrics]) -> Metric:
        """The family with one series per pipeline (and per ``extra`` label value)."""
        labels = [*LABELS, *([self.extra] if self.extra else [])]
        family = _EMPTY[self.kind](PREFIX + self.name, self.help, labels=labels)
        for pipeline in pipelines:
            value = self.read(pipeline)
            if value is None:
                continue
            by_label = value if self.extra else {None: value}
            assert isinstance(by_label, dict)
            for label, one in sorted(by_label.items(), key=lambda item: str(item[0])):
                names = [*pipeline.labels, *([str(label)] if self.extra else [])]
                _add(family, names, one)
        return family


def _add(family: Metric, labels: list[str], value: object) -> None:
    if value is None:
        return
    if isinstance(value, Histogram):
        assert isinstance(family, HistogramMetricFamily)
        family.add_metric(labels, value.cumulative(), value.total)
    else:
        assert isinstance(family, CounterMetricFamily | GaugeMetricFamily)
        assert isinstance(value, int | float)
        family.add_metric(labels, float(value))


_EMPTY: dict[str, Callable[..., Metric]] = {
    "counter": CounterMetricFamily, "gauge": GaugeMetricFamily,
    "histogram": HistogramMetricFamily,
}


def _source(read: Callable[[SourceTotals], object]) -> Callable[[PipelineMetrics], object]:
    return lambda pipeline: read(pipeline.journal.totals)


def _strategy(read: Callable[[StrategyTotals], object]) -> Callable[[PipelineMetrics], object]:
    return lambda pipeline: None if pipeline.reports is None else read(pipeline.reports.totals)


FAMILIES = (
    Family("records", "counter", "Records polled into settled batches (source journal)",
           _source(lambda t: t.records)),
    Family("redelivered_records", "counter",
           "Records among them delivered before (deliveryCount > 1)",
           _source(lambda t: t.redelivered)),
    Family("acknowledged_records", "counter", "Records the source sent ACCEPT for",
           _source(lambda t: t.acknowledged)),
    Family("ack_failures", "counter", "ACCEPTs refused by the client or the broker",
           _source(lambda t: t.ack_failures)),
    Family("settled_batches", "counter", "Batches whose acknowledgements were committed",
           _source(lambda t: t.batches)),
    Family("lock_held_seconds", "histogram", "How long a settled batch held its records' locks",
           _source(lambda t: t.lock_held)),
    Family("lock_budget_margin", "gauge",
           "1 - lock_budget_used of the latest settled batch (0: the lock ran out)",
           _source(lambda t: t.lock_budget_margin)),
    Family("slot_records", "counter", "Records polled per consumer slot",
           _source(lambda t: t.slot_records), extra="slot"),
    Family("slots", "gauge", "Consumer slots that polled the latest settled batch",
           _source(lambda t: t.slots)),
    Family("members", "gauge", "Share-group members that polled the latest settled batch",
           _source(lambda t: t.members)),
    Family("pending_segments", "gauge",
           "Journal segments whose records are not acknowledged yet",
           _source(lambda t: t.pending_segments)),
    Family("batches", "counter", "Batches the strategy applied", _strategy(lambda t: t.batches)),
    Family("rows_in", "counter", "Rows the strategy was given", _strategy(lambda t: t.rows_in)),
    Family("rows_written", "counter", "Rows that changed the target",
           _strategy(lambda t: t.rows_written)),
    Family("replays_absorbed", "counter",
           "Rows absorbed as replays: duplicates in a batch plus rows already applied",
           _strategy(lambda t: t.replays_absorbed)),
    Family("dead_letters", "counter", "Rows sent to the dead-letter sink",
           _strategy(lambda t: t.dead_letters)),
    Family("batch_seconds", "histogram", "How long the strategy took per batch",
           _strategy(lambda t: t.seconds)),
    Family("ledger_rows", "gauge", "Identities in a checkpoint-dedup store's ledger",
           _strategy(lambda t: t.ledger_rows)),
    Family("decisions_in_doubt", "gauge",
           "Two-phase commit decisions logged and not yet completed",
           _strategy(lambda t: t.decisions_in_doubt)),
    Family("share_group_lag", "gauge",
           "Lag of a share-partition as Kafka reports it (kafka-share-groups.sh --describe)",
           lambda p: None if p.lag is None else p.lag.lags, extra="share_partition"),
    Family("spark_batches", "counter", "Micro-batches in Spark's progress events",
           lambda p: p.spark.batches),
    Family("spark_input_rows", "counter", "Spark's numInputRows, summed",
           lambda p: p.spark.input_rows),
    Family("spark_processed_rows_per_second", "gauge",
           "Spark's processedRowsPerSecond of the latest batch",
           lambda p: p.spark.processed_rows_per_second),
    Family("spark_stage_seconds", "histogram", "Spark's durationMs per stage, in seconds",
           lambda p: p.spark.stages, extra="stage"),
)


def collect(pipelines: Sequence[PipelineMetrics]) -> Iterable[Metric]:
    """Every family, each with one series per pipeline."""
    return [family.build(pipelines) for family in FAMILIES]
