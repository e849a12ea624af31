"""Batch metrics are not data: on the suite's S3 server, behind mitmproxy answering every write
or read with 503 SlowDown once the client has no retries left, writing and pruning them logs
and goes on, and the exporter's figures of the journal stay as they were."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import pytest

from kafka_share_eos.journal import BatchMetrics
from kafka_share_eos.journal.metrics_store import MetricsStore
from kafka_share_eos.monitoring.journal_figures import JournalFigures
from kafka_share_eos.proving_ground.launchers.http_faults import HttpFaults
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server
from kafka_share_eos.storage import Location

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def faults(s3_server: S3Server) -> Iterator[HttpFaults]:
    with HttpFaults(s3_server.endpoint) as front:
        yield front


def _journal(s3_server: S3Server, faults: HttpFaults) -> Location:
    options = {key: value for key, value in s3_server.storage_options().items()
               if key != "aws_conditional_put"}
    # No retries: the first 503 is the client giving up.
    options.update(aws_endpoint_url=faults.endpoint, max_retries="0")
    return Location(s3_server.url(f"failing-metrics/{uuid.uuid4().hex[:8]}"), options)


def _batch(seq: int) -> BatchMetrics:
    return BatchMetrics(
        seq=seq, first_seq=seq, records=3, redelivered=0, acknowledged=3, ack_failures=0,
        ack_failed_partitions=0, lock_held_ms=5.0, lock_budget_used=0.01,
        ack_policy="afterCommit", planned_at="2026-12-07T00:00:00+00:00",
        settled_at="2026-12-07T00:00:01+00:00")


def test_metrics_a_failing_store_refuses_are_logged_and_the_next_ones_land(
    s3_server: S3Server, faults: HttpFaults, caplog: pytest.LogCaptureFixture
) -> None:
    faults.heal()
    store = MetricsStore(_journal(s3_server, faults), keep=1)
    store.write(_batch(1))
    store.write(_batch(2))
    faults.fail(503, requests="writes")
    with caplog.at_level(logging.WARNING, logger="kafka_share_eos"):
        store.write(_batch(3))
        assert store.prune() == []
    assert faults.answered == 2
    assert [r.getMessage() for r in caplog.records] == [
        "could not write the metrics of batch 3", "could not prune the batch metrics"]
    faults.heal()

    store.write(_batch(4))

    assert store.prune() == [1, 2]
    assert [batch.seq for batch in store.read_all()] == [4]


def test_the_exporter_s_figures_stay_while_the_store_refuses_reads(
    s3_server: S3Server, faults: HttpFaults
) -> None:
    faults.heal()
    journal = _journal(s3_server, faults)
    MetricsStore(journal).write(_batch(1))
    figures = JournalFigures(journal)
    figures.refresh()
    assert figures.totals.batches == 1
    MetricsStore(journal).write(_batch(2))
    faults.fail(503, requests="reads")

    figures.refresh()

    assert faults.answered >= 1 and figures.totals.batches == 1
    faults.heal()
    figures.refresh()
    assert figures.totals.batches == 2
