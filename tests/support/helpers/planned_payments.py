"""Shared by the tests of the lock budget and of per-batch metrics: a batch planner over a
private embedded broker holding ``RECORDS`` payments, and the metrics its settled batches left."""

from __future__ import annotations

from pathlib import Path

from helpers.planning import planner_options
from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.journal import Journal
from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.journal.metrics_store import MetricsStore
from kafka_share_eos.source.batch_planner import BatchPlanner

TOPIC = "payments"
GROUP = "payments-eos"
RECORDS = 60


def planner_for(broker: EmbeddedBroker, journal: Path, **extra: str) -> BatchPlanner:
    options = planner_options(
        broker, TOPIC, GROUP, journal, **{"kafka.max.poll.records": "20", **extra}
    )
    return BatchPlanner(options, Journal(options.journal_path))


def metrics(journal: Path) -> dict[int, BatchMetrics]:
    return {m.seq: m for m in MetricsStore(str(journal)).read_all()}
