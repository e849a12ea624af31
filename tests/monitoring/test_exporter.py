"""The endpoint on the driver, scraped over HTTP: one series per pipeline with its labels,
values read from the journal's metrics files and the strategy's reports at scrape time."""

from __future__ import annotations

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
                      "strategy": "upsert" if query == "orders" else "", **extra}.items())


def pipeline_options(query: str, journal: Path) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "127.0.0.1:9", "kafka.share.group.id": f"{query}-group",
            "subscribe": query, "journalPath": str(journal)}


def test_two_pipelines_on_one_endpoint(tmp_path: Path) -> None:
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'db'}", "orders", create_table=True,
                                    name="upsert")
    orders = PipelineMetrics("orders", pipeline_options("orders", tmp_path / "j1"), sink)
    refunds = PipelineMetrics("refunds", pipeline_options("refunds", tmp_path / "j2"))
    with serve_metrics(orders, refunds, port=0, addr="127.0.0.1",
                       registry=CollectorRegistry()) as server:
        assert scraped(server.url)[("kafka_share_eos_records_total", labels("orders"))] == 0
        MetricsStore(str(tmp_path / "j2")).write(batch_metrics(1))
        rows = source_rows(key=[b"k"] * 3, value=[b"v"] * 3, topic="orders", partition=0,
                           offset=range(3), deliveryCount=1)
        sink.apply(rows, 0)
        sink.apply(rows, 0)
        samples = scraped(server.url)
    assert samples[("kafka_share_eos_records_total", labels("refunds"))] == 10
    assert samples[("kafka_share_eos_redelivered_records_total", labels("refunds"))] == 2
    assert samples[("kafka_share_eos_lock_budget_margin", labels("refunds"))] == pytest.approx(
        1 - 12.5 / 30_000)
    assert samples[("kafka_share_eos_slot_records_total", labels("refunds", slot="0"))] == 10
    assert samples[("kafka_share_eos_rows_in_total", labels("orders"))] == 6
    assert samples[("kafka_share_eos_rows_written_total", labels("orders"))] == 3
    assert samples[("kafka_share_eos_replays_absorbed_total", labels("orders"))] == 3
    assert samples[("kafka_share_eos_batch_seconds_count", labels("orders"))] == 2
    # A pipeline without a strategy has no strategy series.
    assert ("kafka_share_eos_rows_in_total", labels("refunds")) not in samples
    sink.close()


def test_pipelines_need_distinct_names(tmp_path: Path) -> None:
    one = PipelineMetrics("orders", pipeline_options("orders", tmp_path / "j"))
    with pytest.raises(ConfigurationError, match="distinct query names"):
        serve_metrics(one, one, port=0, registry=CollectorRegistry())
    with pytest.raises(ConfigurationError, match="at least one"):
        serve_metrics(port=0, registry=CollectorRegistry())


def test_a_closed_endpoint_frees_its_port_and_its_registry(tmp_path: Path) -> None:
    registry = CollectorRegistry()
    pipeline = PipelineMetrics("orders", pipeline_options("orders", tmp_path / "j"))
    server = serve_metrics(pipeline, port=0, addr="127.0.0.1", registry=registry)
    server.close()
    server.close()
    assert registry.get_sample_value("kafka_share_eos_records_total", {
        "query": "orders", "group": "orders-group", "topic": "orders", "strategy": ""}) is None
    # The same pipeline may be served again once the first endpoint is closed.
    with serve_metrics(pipeline, port=0, addr="127.0.0.1", registry=registry) as again:
        assert ("kafka_share_eos_records_total", labels("orders", strategy="")) in scraped(
            again.url)
