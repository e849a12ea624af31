"""The Prometheus metric families of the pipelines: names, help texts and where each value
comes from. docs/operations.md ("Prometheus") lists the same table for users."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from kafka_share_eos._extras import METRICS
from kafka_share_eos.monitoring.histogram import Histogram
from kafka_share_eos.monitoring.journal_figures import SourceTotals
from kafka_share_eos.monitoring.report_figures import StrategyTotals
from kafka_share_eos.monitoring.watched_pipeline import PipelineMetrics, SparkTotals

with METRICS.needed_by("Prometheus metrics"):
    from prometheus_client.core import (
        CounterMetricFamily,
        GaugeMetricFamily,
        HistogramMetricFamily,
        Metric,
    )

PREFIX = "kafka_share_eos_"

Value = float | int | None
Read = Callable[[PipelineMetrics], Mapping[tuple[str, ...], object] | None]
"""A family's values for one pipeline, by the values of its labels after ``query`` and
``group``."""


@dataclass(frozen=True)
class Family:
    """One metric family: ``kind`` is counter, gauge or histogram; ``labels`` its labels after
    ``query`` and ``group``; ``read`` gives one pipeline's values by those labels' values."""

    name: str
    kind: str
    help: str
    read: Read
    labels: tuple[str, ...] = ("topic",)

    def build(self, pipelines: Sequence[PipelineMetrics]) -> Metric:
        """The family with its series for every pipeline."""
        family = _EMPTY[self.kind](PREFIX + self.name, self.help,
                                   labels=["query", "group", *self.labels])
        for pipeline in pipelines:
            values = self.read(pipeline) or {}
            for labels, value in sorted(values.items()):
                # prometheus_client would drop the labels beyond the family's unnoticed.
                assert len(labels) == len(self.labels), (self.name, labels)
                _add(family, [*pipeline.labels[:2], *labels], value)
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

PARTITION = ("topic", "partition")
STRATEGY = ("topic", "strategy")


def _source(read: Callable[[SourceTotals], object]) -> Read:
    return lambda p: {(p.labels[2],): read(p.journal.totals)}


def _strategy(read: Callable[[StrategyTotals], object]) -> Read:
    return lambda p: None if p.reports is None else {
        (p.labels[2], p.strategy): read(p.reports.totals)}


def _by_strategy(name: str, kind: str, figure: str, help: str) -> Family:
    """A family of the strategy's figure ``figure`` (a field of :class:`StrategyTotals`)."""
    return Family(name, kind, help, _strategy(lambda t: getattr(t, figure)), STRATEGY)


def _spark(read: Callable[[SparkTotals], object]) -> Read:
    return lambda p: {(p.labels[2],): read(p.spark)}


def _per_partition(pipeline: PipelineMetrics,
                   values: Mapping[tuple[str, int], object]) -> dict[tuple[str, ...], object]:
    # A batch file of an earlier release names no partition: its records keep the pipeline's
    # topic label and an empty partition.
    return {(topic or pipeline.labels[2], "" if partition < 0 else str(partition)): value
            for (topic, partition), value in values.items()}


def _records(pipeline: PipelineMetrics) -> dict[tuple[str, ...], object]:
    # Every partition the brokers named starts at 0, so that rate() sees its first records.
    known = {} if pipeline.log_ends is None else dict.fromkeys(pipeline.log_ends.offsets, 0)
    return _per_partition(pipeline, {**known, **pipeline.journal.totals.records})


def _backlog(pipeline: PipelineMetrics) -> dict[tuple[str, ...], object] | None:
    if pipeline.log_ends is None:
        return None
    ends, journaled = pipeline.log_ends.offsets, pipeline.journal.totals.last_offsets
    return _per_partition(pipeline, {partition: max(0, end - journaled[partition] - 1)
                                     for partition, end in ends.items()
                                     if partition in journaled})


def _log_end(pipeline: PipelineMetrics) -> dict[tuple[str, ...], object] | None:
    return None if pipeline.log_ends is None else _per_partition(
        pipeline, pipeline.log_ends.offsets)


def _lag(pipeline: PipelineMetrics) -> dict[tuple[str, ...], object] | None:
    return None if pipeline.lag is None else _per_partition(pipeline, pipeline.lag.lags)


ACKNOWLEDGED_LATER = (
    " Counted when the micro-batch's acknowledgements are committed: with "
    "acknowledge=afterCommit, when Spark starts the next micro-batch.")

FAMILIES = (
    Family("records_consumed_total", "counter",
           "Records the query fetched from the share group, counted when written to the "
           "query's journal; a record delivered again counts again. rate() of it is the "
           "consumption rate.",
           _records, PARTITION),
    Family("records_redelivered_total", "counter",
           "Records fetched with a delivery count above 1: delivered before, then released, "
           "timed out or not acknowledged, and delivered again (counted when journaled).",
           _source(lambda t: t.redelivered)),
    Family("records_acknowledged_total", "counter",
           "Records the query acknowledged as processed (ACCEPT) to the share group."
           + ACKNOWLEDGED_LATER,
           _source(lambda t: t.acknowledged)),
    Family("acknowledgement_errors_total", "counter",
           "Records whose ACCEPT acknowledgement the client or the broker refused; the share "
           "group delivers them again." + ACKNOWLEDGED_LATER,
           _source(lambda t: t.ack_failures)),
    Family("batches_acknowledged_total", "counter",
           "Micro-batches whose records' acknowledgements were committed to the share group."
           + ACKNOWLEDGED_LATER,
           _source(lambda t: t.batches)),
    Family("record_lock_held_seconds", "histogram",
           "How long a micro-batch's records stayed locked to the query (acquired from the "
           "share group) before their acknowledgement was committed." + ACKNOWLEDGED_LATER,
           _source(lambda t: t.lock_held)),
    Family("record_lock_remaining_ratio", "gauge",
           "Fraction of the record lock duration (group.share.record.lock.duration.ms) still "
           "left when the latest micro-batch's acknowledgements were committed: 1 minus the "
           "time its records were held divided by the lock duration; at 0 or below the locks "
           "expired and the broker could deliver the records to another consumer.",
           _source(lambda t: t.lock_budget_margin)),
    Family("consumer_records_total", "counter",
           "Records fetched per consumer of the query, label consumer: with the source option "
           "consumers=N, consumer 0 to N-1 polling in Spark's executor tasks; with one "
           "consumer, 0." + ACKNOWLEDGED_LATER,
           lambda p: {(p.labels[2], slot): n for slot, n in p.journal.totals.slot_records.items()},
           ("topic", "consumer")),
    Family("consumers", "gauge",
           "Consumers (source option consumers) that fetched the latest acknowledged "
           "micro-batch.",
           _source(lambda t: t.slots)),
    Family("share_group_members", "gauge",
           "Distinct share-group members (Kafka share consumers) of this query that fetched "
           "the latest acknowledged micro-batch.",
           _source(lambda t: t.members)),
    Family("journal_unacknowledged_segments", "gauge",
           "Files in the query's journal whose records are fetched and journaled but not yet "
           "acknowledged to the share group (one per poll; with consumers=N, one per "
           "consumer and poll).",
           _source(lambda t: t.pending_segments)),
    Family("backlog_records", "gauge",
           "Records in the partition after the highest offset this query has journaled: the "
           "log-end offset minus that offset minus 1. When the query is the share group's only "
           "consumer, the group's lag is this plus the records fetched and not yet "
           "acknowledged; other consumers of the group may have taken some of these records.",
           _backlog, PARTITION),
    Family("log_end_offset", "gauge",
           "The partition's log-end offset (the offset the next record written will get), as "
           "the brokers answer a ListOffsets request.",
           _log_end, PARTITION),
    _by_strategy("strategy_batches_total", "counter", "batches",
                 "Micro-batches the foreachBatch strategy applied (a micro-batch Spark runs "
                 "again after a restart counts again)."),
    _by_strategy("strategy_input_rows_total", "counter", "rows_in",
                 "Rows Spark handed to the strategy."),
    _by_strategy("strategy_written_rows_total", "counter", "rows_written",
                 "Rows that changed the strategy's target (inserted, updated or appended)."),
    _by_strategy("strategy_duplicate_rows_total", "counter", "replays_absorbed",
                 "Rows the strategy did not write because their effect was there already: the "
                 "same record twice in one micro-batch, or a record redelivered by the share "
                 "group or replayed by Spark after it had been applied."),
    _by_strategy("dead_lettered_rows_total", "counter", "dead_letters",
                 "Rows the strategy sent to its dead-letter sink (a value it could not decode, a "
                 "row the target refused, or a record at the share group's delivery limit)."),
    _by_strategy("strategy_batch_duration_seconds", "histogram", "seconds",
                 "How long the strategy took to apply a micro-batch."),
    _by_strategy("dedup_ledger_identities", "gauge", "ledger_rows",
                 "Record identities kept in a CheckpointDedupStore's ledger (a Delta table)."),
    _by_strategy("twophase_decisions_in_doubt", "gauge", "decisions_in_doubt",
                 "Two-phase commit decisions logged whose commits are not completed yet."),
    Family("share_group_lag_records", "gauge",
           "The share group's lag on the partition as Kafka reports it (kafka-share-groups.sh "
           "--describe), read with the lag_command option.",
           _lag, PARTITION),
    Family("spark_micro_batches_total", "counter",
           "Micro-batches of the query in Spark's progress events.",
           _spark(lambda s: s.batches)),
    Family("spark_input_rows_total", "counter",
           "Rows Spark read in the query's micro-batches (numInputRows of its progress "
           "events).",
           _spark(lambda s: s.input_rows)),
    Family("spark_processed_rows_per_second", "gauge",
           "Spark's processedRowsPerSecond of the query's latest micro-batch.",
           _spark(lambda s: s.processed_rows_per_second)),
    Family("spark_stage_duration_seconds", "histogram",
           "Time of each stage of the query's micro-batches in Spark's progress events "
           "(durationMs, label stage).",
           lambda p: {(p.labels[2], stage): h for stage, h in p.spark.stages.items()},
           ("topic", "stage")),
)


def collect(pipelines: Sequence[PipelineMetrics]) -> Iterable[Metric]:
    """Every family, each with its series for every pipeline."""
    return [family.build(pipelines) for family in FAMILIES]


def sample_names() -> set[str]:
    """The names of the samples the families serve (a histogram's ``_bucket``, ``_sum`` and
    ``_count``), as PromQL refers to them."""
    suffixes = {"counter": ("",), "gauge": ("",), "histogram": ("_bucket", "_sum", "_count")}
    return {PREFIX + family.name + suffix for family in FAMILIES
            for suffix in suffixes[family.kind]}
