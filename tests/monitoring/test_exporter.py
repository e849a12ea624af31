"""The endpoint on the driver, scraped over HTTP: one series per pipeline with its labels,
values read from the journal's metrics files and the strategy's reports at scrape time."""

from __future__ import annotations

import dataclasses
import urllib.request
from pathlib import Path

import pytest
from helpers.batches import source_rows
from helpers.metrics import batch_metrics
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families

from kafka_share_eos import ConfigurationError, PipelineMetrics, serve_metrics
from kafka_share_eos.journal.metrics_store import MetricsStore
from kafka_share_eos.strategies import IdempotentUpsertSink


def scraped(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    text = urllib.request.urlopen(url, timeout=10).read().decode()
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def labels(query: str, **extra: str) -> frozenset[tuple[str, str]]:
    return frozenset({"query": query, "group": f"{query}-group", "topic": query,
                      **extra}.items())


def pipeline_options(query: str, journal: Path) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "127.0.0.1:9", "kafka.share.group.id": f"{query}-group",
            "subscribe": query, "journalPath": str(journal)}


def test_two_pipelines_on_one_endpoint(tmp_path: Path) -> None:
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'db'}", "orders", create_table=True,
                                    name="upsert")
    orders = PipelineMetrics("orders", pipeline_options("orders", tmp_path / "j1"), sink,
                             log_ends=False)
    refunds = PipelineMetrics("refunds", pipeline_options("refunds", tmp_path / "j2"),
                              log_ends=False)
    with serve_metrics(orders, refunds, port=0, addr="127.0.0.1",
                       registry=CollectorRegistry()) as server:
        assert scraped(server.url)[
            ("kafka_share_eos_batches_acknowledged_total", labels("orders"))] == 0
        MetricsStore(str(tmp_path / "j2")).write(dataclasses.replace(
            batch_metrics(1), partitions=[
                {"topic": "refunds", "partition": 0, "records": 4, "last_offset": 7},
                {"topic": "refunds", "partition": 3, "records": 6, "last_offset": 5}]))
        rows = source_rows(key=[b"k"] * 3, value=[b"v"] * 3, topic="orders", partition=0,
                           offset=range(3), deliveryCount=1)
        sink.apply(rows, 0)
        sink.apply(rows, 0)
        samples = scraped(server.url)
    consumed = "kafka_share_eos_records_consumed_total"
    assert samples[(consumed, labels("refunds", partition="0"))] == 4
    assert samples[(consumed, labels("refunds", partition="3"))] == 6
    assert samples[("kafka_share_eos_records_redelivered_total", labels("refunds"))] == 2
    assert samples[("kafka_share_eos_record_lock_remaining_ratio", labels("refunds"))] == (
        pytest.approx(1 - 12.5 / 30_000))
    assert samples[("kafka_share_eos_consumer_records_total",
                    labels("refunds", consumer="0"))] == 10
    upsert = {"strategy": "upsert"}
    assert samples[("kafka_share_eos_strategy_input_rows_total", labels("orders", **upsert))] == 6
    assert samples[("kafka_share_eos_strategy_written_rows_total",
                    labels("orders", **upsert))] == 3
    assert samples[("kafka_share_eos_strategy_duplicate_rows_total",
                    labels("orders", **upsert))] == 3
    assert samples[("kafka_share_eos_strategy_batch_duration_seconds_count",
                    labels("orders", **upsert))] == 2
    # A pipeline without a strategy has no strategy series, and no series but a strategy's
    # carries the strategy label.
    assert not [name for name, series in samples if name.startswith(
        "kafka_share_eos_strategy_") and ("query", "refunds") in series]
    assert {name for name, series in samples if ("strategy", "upsert") in series} == {
        "kafka_share_eos_strategy_batches_total", "kafka_share_eos_strategy_input_rows_total",
        "kafka_share_eos_strategy_written_rows_total",
        "kafka_share_eos_strategy_duplicate_rows_total",
        "kafka_share_eos_dead_lettered_rows_total",
        *(f"kafka_share_eos_strategy_batch_duration_seconds_{suffix}"
          for suffix in ("bucket", "sum", "count"))}
    sink.close()


def test_pipelines_need_distinct_names(tmp_path: Path) -> None:
    one = PipelineMetrics("orders", pipeline_options("orders", tmp_path / "j"), log_ends=False)
    with pytest.raises(ConfigurationError, match="distinct query names"):
        serve_metrics(one, one, port=0, registry=CollectorRegistry())
    with pytest.raises(ConfigurationError, match="at least one"):
        serve_metrics(port=0, registry=CollectorRegistry())


def test_a_closed_endpoint_frees_its_port_and_its_registry(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    pipeline = PipelineMetrics("orders", pipeline_options("orders", tmp_path / "j"),
                               log_ends=False)
    server = serve_metrics(pipeline, port=0, addr="127.0.0.1", registry=registry)
    server.close()
    server.close()
    series = {"query": "orders", "group": "orders-group", "topic": "orders"}
    assert registry.get_sample_value("kafka_share_eos_batches_acknowledged_total",
                                     series) is None
    # The same pipeline may be served again once the first endpoint is closed.
    with serve_metrics(pipeline, port=0, addr="127.0.0.1", registry=registry) as again:
        assert ("kafka_share_eos_batches_acknowledged_total", labels("orders")) in scraped(
            again.url)
