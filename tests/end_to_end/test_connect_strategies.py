"""Every strategy, target and dead-letter sink in a Spark Connect session, end to end.

A client session on the suite's Connect server reads payments through the ``kafka-share``
source and hands each micro-batch to the strategy, which the client pickled and the server's
``foreachBatch`` worker runs. After the first batch the embedded broker drops every share
session, so the records of that applied batch come again; the target still holds each record
once, and each dead letter (a payment without an amount, refused by the ``transform``) is kept
once.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import produce
from helpers.accounts import payment_columns
from helpers.connect import DropsShareSessions, paid
from helpers.strategy_cases import CASES, payment, two_phase
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.pipeline_status import journal_status
from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

pytestmark = [pytest.mark.connect, pytest.mark.partitions(1), pytest.mark.timeout(300)]

COUNT = 40
BAD = (5, 23)
"""The offsets of the payments without an amount, in the dead-letter cases."""

IN_CI = ("sqlite-dead-letters", "dedup-store", "two-phase-prepared-on-executors")
"""One case of each family runs in CI, every other under ``full``."""

CONNECT_CASES = {
    **CASES,
    "two-phase-prepared-on-executors": two_phase(lambda url, tmp: str(tmp / "decisions"),
                                                 "executors"),
}


@pytest.mark.parametrize("kind", [
    kind if kind in IN_CI else pytest.param(kind, marks=pytest.mark.full) for kind in CONNECT_CASES
])
def test_each_record_is_applied_once_through_a_connect_session(
    kind: str, request: pytest.FixtureRequest, connect_spark: Any,
    spark_connect_server: SparkConnectServer, share_topic: ShareTopic, tmp_path: Path,
) -> None:
    case = CONNECT_CASES[kind](request, tmp_path, {"transform": paid})
    bad = BAD if case.letters is not None else ()
    produce(share_topic.bootstrap_servers, share_topic.topic,
            [b"unpaid" if offset in bad else payment(offset) for offset in range(COUNT)])
    stream = share_stream(connect_spark, share_topic, tmp_path / "journal",
                          **{"kafka.max.poll.records": "10"})

    run_available_now(payment_columns(stream), tmp_path / "checkpoint",
                      DropsShareSessions(case.strategy, share_topic.bootstrap_servers),
                      server=spark_connect_server)

    expected = [offset for offset in range(COUNT) if offset not in bad]
    for target in case.targets:
        assert target() == expected
    # The first batch's records came again, and were found applied.
    assert journal_status(str(tmp_path / "journal")).to_dict()["totals"]["ack_failures"] > 0
    if case.letters is not None:
        assert sorted(case.letters.read()["offset"].to_pylist()) == list(bad)
        case.letters.close()
