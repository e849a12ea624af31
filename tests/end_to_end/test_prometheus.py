"""A pipeline scraped by a real Prometheus: the kafka-share source on the embedded broker, Spark
local, an upsert into SQLite with dead letters, the metrics endpoint on the driver, and Debian's
Prometheus scraping it every second with the shipped alert rules loaded.

PromQL over Prometheus's HTTP API returns the rows the target holds and the dead letters the
sink holds, the records consumed per partition as the journal counts them, no backlog once the
run drained the topic, a consumption rate, Spark's numInputRows (through the listener) equal to
the rows the strategy was handed, the strategy label on the strategy's series only, and the
dead-letter alert fires; promtool checks the endpoint's text.
"""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.streaming import share_stream
from prometheus_client import CollectorRegistry

from kafka_share_eos import (
    DeadLetterPolicy,
    IdempotentUpsertSink,
    SqlDeadLetters,
    journal_status,
)
from kafka_share_eos.monitoring import PipelineMetrics, serve_metrics
from kafka_share_eos.monitoring.families import FAMILIES, PREFIX
from kafka_share_eos.proving_ground import streams
from kafka_share_eos.proving_ground.launchers.prometheus import PrometheusServer, promtool
from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

ALERTS = Path(__file__).resolve().parents[2] / "docs" / "prometheus" / "alerts.yml"
COUNT = 60
QUERY = "orders"


def decode(rows: pa.Table) -> pa.Table:
    """Order columns from JSON values; a value that is not JSON raises (a dead letter)."""
    decoded = [json.loads(v) for v in rows["value"].to_pylist()]
    return pa.table({"topic": rows["topic"], "partition": rows["partition"],
                     "offset": rows["offset"],
                     "amount": pa.array([int(d["amount"]) for d in decoded], pa.int64())})


def value_of(prometheus: PrometheusServer, promql: str) -> float | None:
    result = prometheus.query(promql)
    return float(result[0]["value"][1]) if result else None


def firing(prometheus: PrometheusServer, name: str) -> list[dict[str, Any]]:
    return [alert for alert in prometheus.alerts()
            if alert["labels"]["alertname"] == name and alert["state"] == "firing"]


def test_prometheus_sees_the_rows_and_dead_letters_of_a_run(
    spark: SparkSession, share_topic: ShareTopic, tmp_path: Path,
    prometheus: Callable[..., PrometheusServer],
) -> None:
    values = [b"{broken" if i % 10 == 3 else json.dumps({"amount": i}).encode()
              for i in range(COUNT)]
    produce(share_topic.bootstrap_servers, share_topic.topic, values,
            partitions=share_topic.partitions)
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    dead = SqlDeadLetters(url, "orders_dead")
    sink = IdempotentUpsertSink.sql(url, "orders", create_table=True, transform=decode,
                                    dead_letters=DeadLetterPolicy(dead), name="upsert")
    options = streams.source_options(share_topic.bootstrap_servers, share_topic.group_id,
                                     share_topic.topic, tmp_path / "journal",
                                     **{"kafka.max.poll.records": "20"})
    labels = f'query="{QUERY}",group="{share_topic.group_id}",topic="{share_topic.topic}"'
    with serve_metrics(PipelineMetrics(QUERY, options, sink), port=0, addr="127.0.0.1",
                       spark=spark, registry=CollectorRegistry()) as endpoint:
        server = prometheus([f"127.0.0.1:{endpoint.port}"], [ALERTS])
        # A first scrape before the run: the alert's increase() needs the counter at zero.
        server.wait_for("the first scrape", lambda: value_of(
            server, f"kafka_share_eos_dead_lettered_rows_total{{{labels}}}") == 0)

        df = share_stream(spark, share_topic, tmp_path / "journal",
                          **{"kafka.max.poll.records": "20"})
        query = (df.writeStream.foreachBatch(sink).queryName(QUERY).trigger(availableNow=True)
                 .option("checkpointLocation", str(tmp_path / "cp")).start())
        try:
            assert query.awaitTermination(180), "the availableNow query did not finish"
        finally:
            query.stop()
            wait_for_source_runners(spark)
        assert query.exception() is None

        with sa.create_engine(url).connect() as conn:
            written = conn.exec_driver_sql("SELECT count(*) FROM orders").scalar_one()
        letters = dead.read().num_rows
        assert (written, letters) == (COUNT - COUNT // 10, COUNT // 10)
        rows_in = sink.totals.rows_in
        status = journal_status(str(tmp_path / "journal"))
        polled = status.totals.records
        assert polled == rows_in
        per_partition: dict[int, int] = {}
        for batch in status.batches:
            for entry in batch.partitions:
                per_partition[entry["partition"]] = (
                    per_partition.get(entry["partition"], 0) + entry["records"])
        assert sum(per_partition.values()) == polled
        expected = {
            f"sum(kafka_share_eos_records_consumed_total{{{labels}}})": polled,
            f"kafka_share_eos_strategy_written_rows_total{{{labels}}}": written,
            f"kafka_share_eos_dead_lettered_rows_total{{{labels}}}": letters,
            f"kafka_share_eos_strategy_input_rows_total{{{labels}}}": rows_in,
            f"kafka_share_eos_spark_input_rows_total{{{labels}}}": rows_in,
            # Every record journaled: no partition has records after the highest offset.
            f"sum(kafka_share_eos_backlog_records{{{labels}}})": 0,
            f"count(kafka_share_eos_backlog_records{{{labels}}})": share_topic.partitions,
            **{f'kafka_share_eos_records_consumed_total{{{labels},partition="{p}"}}': n
               for p, n in per_partition.items()},
        }
        for promql, value in expected.items():
            server.wait_for(f"{promql} == {value}", lambda q=promql, v=value: value_of(
                server, q) == v)
        # The consumption rate as the docs write it (Kafka's records-consumed-rate).
        rate = f"sum by (query) (rate(kafka_share_eos_records_consumed_total{{{labels}}}[1m]))"
        server.wait_for("a consumption rate", lambda: (value_of(server, rate) or 0) > 0)
        # The strategy label is on the strategy's series only.
        with_strategy = {row["metric"]["__name__"] for row in server.query(
            f'count by (__name__) ({{__name__=~"kafka_share_eos_.*",strategy!="",{labels}}})')}
        assert "kafka_share_eos_strategy_input_rows_total" in with_strategy
        assert with_strategy <= {
            PREFIX + family.name + suffix for family in FAMILIES if "strategy" in family.labels
            for suffix in {"histogram": ("_bucket", "_sum", "_count")}.get(family.kind, ("",))}
        alerts = server.wait_for("the dead-letter alert firing", lambda: firing(
            server, "KafkaShareEosDeadLettersRising"))
        assert alerts[0]["labels"]["query"] == QUERY
        scraped = urllib.request.urlopen(endpoint.url, timeout=10).read().decode()
    sink.close()
    dead.close()
    checked = subprocess.run([str(promtool()), "check", "metrics"], input=scraped,
                             capture_output=True, text=True, timeout=60, check=False)
    assert checked.returncode == 0 and not checked.stdout.strip(), (
        checked.stdout + checked.stderr)
