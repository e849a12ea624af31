"""Operating a Spark Connect pipeline from the client's machine.

The metrics endpoint runs in the client's process: Spark's progress reaches it through the
client's listener, the source's figures through the journal, and the strategy's through the
client's session, where the strategy's copy in the server's foreachBatch worker hands its
reports. A plain HTTP scrape after a run serves the records read, the batches and the
strategy's outcomes of the data. ``status``, ``doctor`` and ``twophase recover`` then read, from
the client, what the pipeline left on storage, on local disk and on an S3 server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from helpers import accounts, produce
from helpers.broker_dead_letters import decode
from helpers.processes import wait_until
from helpers.streaming import share_stream
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from pyspark import cloudpickle

from kafka_share_eos import DeadLetterPolicy, IdempotentUpsertSink, SqlDeadLetters, register
from kafka_share_eos.monitoring import PipelineMetrics, serve_metrics
from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground import streams
from kafka_share_eos.proving_ground.launchers.spark import source_runners
from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies.two_phase_commit import TwoPhaseCommitCoordinator
from kafka_share_eos.twophase.postgres import PostgresParticipant

pytestmark = [pytest.mark.connect, pytest.mark.timeout(300)]

COUNT = 40
QUERY = "orders"


def orders() -> list[bytes]:
    """``COUNT`` orders, every tenth of them no JSON (a dead letter)."""
    return [b"{broken" if i % 10 == 3 else json.dumps({"order_id": i}).encode()
            for i in range(COUNT)]


def scrape(url: str) -> dict[str, float]:
    """Every sample of the endpoint's kafka_share_eos families, by name (labels left out:
    one pipeline; a family's series per partition summed)."""
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode()
    samples: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.startswith("kafka_share_eos_") and "le" not in sample.labels:
                samples[sample.name] = samples.get(sample.name, 0.0) + sample.value
    return samples


def run_query(spark: Any, stream: Any, sink: Any, checkpoint: Path,
              server: SparkConnectServer) -> None:
    query = (stream.writeStream.foreachBatch(sink).queryName(QUERY).trigger(availableNow=True)
             .option("checkpointLocation", str(checkpoint)).start())
    try:
        assert query.awaitTermination(180), "the availableNow query did not finish"
    finally:
        query.stop()
        wait_until(lambda: not source_runners(server.pid), 60,
                   "the Connect server's kafka-share source runners to exit")
    assert query.exception() is None


def test_the_clients_endpoint_serves_what_the_server_ran(
    connect_spark: Any, spark_connect_server: SparkConnectServer, share_topic: ShareTopic,
    tmp_path: Path,
) -> None:
    # The transform is test code the server does not have: shipped by value.
    cloudpickle.register_pickle_by_value(sys.modules["helpers.broker_dead_letters"])
    url = f"sqlite:///{tmp_path / 'shop.db'}"
    dead = SqlDeadLetters(url, "orders_dead")
    sink = IdempotentUpsertSink.sql(url, "orders", create_table=True, transform=decode,
                                    dead_letters=DeadLetterPolicy(dead), name="upsert")
    produce(share_topic.bootstrap_servers, share_topic.topic, orders(),
            partitions=share_topic.partitions)
    options = streams.source_options(share_topic.bootstrap_servers, share_topic.group_id,
                                     share_topic.topic, tmp_path / "journal",
                                     **{"kafka.max.poll.records": "20"}, availableNowIdleMs="2000")
    with serve_metrics(PipelineMetrics(QUERY, options, sink), port=0, addr="127.0.0.1",
                       spark=connect_spark, registry=CollectorRegistry()) as endpoint:
        assert scrape(endpoint.url)["kafka_share_eos_strategy_batches_total"] == 0
        stream = share_stream(connect_spark, share_topic, tmp_path / "journal",
                              **{"kafka.max.poll.records": "20"}, availableNowIdleMs="2000")
        run_query(connect_spark, stream, sink, tmp_path / "cp", spark_connect_server)

        with sa.create_engine(url).connect() as conn:
            written = conn.exec_driver_sql(
                "SELECT count(DISTINCT \"offset\" || '/' || \"partition\") FROM orders"
            ).scalar_one()
        letters = dead.read().num_rows
        assert (written, letters) == (COUNT - COUNT // 10, COUNT // 10)
        # The client's object ran no batch: every figure below came from the server's copy.
        assert sink.totals.batches == 0
        polled = journal_status(str(tmp_path / "journal")).totals
        # Spark's progress events reach the client's listener after each batch, on their own.
        samples = wait_until(lambda: (s := scrape(endpoint.url))[
            "kafka_share_eos_spark_input_rows_total"] == polled.records and s, 60,
            "Spark's progress of every batch at the endpoint")
    assert samples["kafka_share_eos_records_consumed_total"] == polled.records
    assert samples["kafka_share_eos_batches_acknowledged_total"] == polled.batches
    assert samples["kafka_share_eos_strategy_input_rows_total"] == polled.records
    assert samples["kafka_share_eos_strategy_written_rows_total"] == written
    assert samples["kafka_share_eos_dead_lettered_rows_total"] == letters
    assert samples["kafka_share_eos_strategy_duplicate_rows_total"] == polled.records - COUNT
    batches = samples["kafka_share_eos_strategy_batches_total"]
    assert batches == samples["kafka_share_eos_spark_micro_batches_total"] >= 2
    assert samples["kafka_share_eos_strategy_batch_duration_seconds_count"] == batches
    sink.close()
    dead.close()


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line, as an operator on the client's machine runs it."""
    return subprocess.run([sys.executable, "-m", "kafka_share_eos.cli.main", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.postgres
@pytest.mark.parametrize("store", ["local", "s3_server"])
def test_status_doctor_and_recover_read_what_a_connect_pipeline_left(
    store: str, connect_spark: Any, spark_connect_server: SparkConnectServer,
    share_topic: ShareTopic, postgres_url: str, tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    accounts.create_accounts(postgres_url)
    sent = accounts.produce_payments(share_topic, 90)
    journal, storage = str(tmp_path / "journal"), {}
    if store != "local":
        s3 = request.getfixturevalue(store)
        journal, storage = s3.url(f"{tmp_path.name}/journal"), s3.storage_options()
    options = streams.source_options(
        share_topic.bootstrap_servers, share_topic.group_id, share_topic.topic, journal,
        **{"kafka.max.poll.records": "30"}, availableNowIdleMs="2000",
        **{f"storage.{key}": value for key, value in storage.items()})
    coordinator = TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[PostgresParticipant(postgres_url, accounts.INCREMENT)], app_id="payments")
    register(connect_spark)
    stream = accounts.payment_columns(streams.share_stream(connect_spark, options))
    run_query(connect_spark, stream, coordinator, tmp_path / "checkpoint", spark_connect_server)
    assert accounts.balances(postgres_url) == accounts.expected_balances(sent)

    settings = [arg for key, value in storage.items() for arg in ("-o", f"{key}={value}")]
    status = cli("status", "--journal", journal, "--json", *settings)
    assert status.returncode == 0, status.stderr
    report = json.loads(status.stdout)
    totals = report["totals"]
    assert totals["records"] == 90 + totals["redelivered"]
    assert totals["acknowledged"] == totals["records"] and report["pending"] == []
    doctor = cli("doctor", "--checkpoint", str(tmp_path / "checkpoint"), "--json")
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["healthy"] is True
    recover = cli("twophase", "recover", "--app-id", "payments", "--decision-log",
                  str(tmp_path / "decisions"), "--postgres", postgres_url)
    assert recover.returncode == 0, recover.stderr
    assert recover.stdout.strip() == "payments: no transaction in doubt"
    assert accounts.prepared_gids(postgres_url) == []
