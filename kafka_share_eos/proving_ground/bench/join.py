"""The start-up of a ``kafka-share`` query against a bare ``ShareConsumer``'s, on one broker.

A new share-group member receives its partitions one heartbeat interval after it joins
(``share.heartbeat.interval.ms``, 5 s by Kafka's default and the brokers' floor unless
``group.share.min.heartbeat.interval.ms`` is lowered), so a short pipeline's run is mostly that
wait. This tells how much of a query's start-up is Kafka's and how much the toolkit and Spark
add: the time from ``start()`` to the first call of the query's ``foreachBatch`` (its first
records) against a bare consumer's time from ``subscribe`` to its first poll with records, each
in a new group reading from the earliest offset, same topic, same client settings.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import ShareConsumer

from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners
from kafka_share_eos.proving_ground.streams import share_stream, source_options

FIRST_RECORD_TIMEOUT_S = 120.0


def raw_first_record(bootstrap: str, topic: str, group: str, poll_records: int) -> float:
    """Seconds from a bare ``ShareConsumer``'s ``subscribe`` to its first poll with records.

    Raises:
        RuntimeError: no record within :data:`FIRST_RECORD_TIMEOUT_S`.
    """
    consumer = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit",
                              "max.poll.records": poll_records})
    try:
        started = time.perf_counter()
        consumer.subscribe([topic])
        while time.perf_counter() - started < FIRST_RECORD_TIMEOUT_S:
            if consumer.poll(0.05):
                return time.perf_counter() - started
    finally:
        # Closing without acknowledging leaves the records to the group, as a crash would.
        consumer.close()
    raise RuntimeError(f"the raw share consumer read nothing from {topic!r} in "
                       f"{FIRST_RECORD_TIMEOUT_S:.0f} s")


def query_first_record(spark: Any, bootstrap: str, topic: str, group: str, work: Path,
                       poll_records: int) -> dict[str, float]:
    """Seconds from a ``kafka-share`` query's ``start()`` to its ``foreachBatch``'s first call,
    and how long the first micro-batch's planning (``latestOffset``) took of it.

    Raises:
        RuntimeError: no batch within :data:`FIRST_RECORD_TIMEOUT_S`, or the query failed.
    """
    arrived = threading.Event()
    first: list[tuple[float, int]] = []

    def record_first(_batch_df: Any, batch_id: int) -> None:
        if not first:
            first.append((time.perf_counter(), batch_id))
            arrived.set()

    def first_progress() -> list[dict[str, Any]]:
        # By batch id: numInputRows counts rows per action on the batch, and this takes none.
        return [p for p in query.recentProgress if first and p["batchId"] == first[0][1]]

    options = source_options(bootstrap, group, topic, work / f"journal-{group}",
                             **{"kafka.max.poll.records": str(poll_records)})
    writer = share_stream(spark, options).writeStream.foreachBatch(record_first).option(
        "checkpointLocation", str(work / f"checkpoint-{group}"))
    started = time.perf_counter()
    query = writer.start()
    try:
        arrived.wait(FIRST_RECORD_TIMEOUT_S)
        # The first batch's progress report, which holds its planning's time, comes once the
        # batch has ended: untimed.
        deadline = time.perf_counter() + FIRST_RECORD_TIMEOUT_S
        while (first and not first_progress() and query.isActive
               and time.perf_counter() < deadline):
            time.sleep(0.05)
    finally:
        query.stop()
        # Its runner leaves the group as it exits: wait, so that the next contender starts alone.
        wait_for_source_runners(spark)
    progress = first_progress()
    if not progress:
        raise RuntimeError(f"the kafka-share query read nothing from {topic!r} in "
                           f"{FIRST_RECORD_TIMEOUT_S:.0f} s: {query.exception()}")
    planning_ms = progress[0]["durationMs"].get("latestOffset", 0)
    return {"seconds": first[0][0] - started, "planning_s": planning_ms / 1000.0}


def measure(spark: Any, bootstrap: str, topic: str, work: Path, poll_records: int, tag: str,
            prepare_group: Callable[[str], object]) -> dict[str, float]:
    """One round: the raw consumer's and the query's times to their first record, each in a
    group of its own that ``prepare_group`` sets up first; ``ratio`` is the query's over the
    raw consumer's."""
    raw_group, query_group = f"bench-join-raw-{tag}", f"bench-join-query-{tag}"
    prepare_group(raw_group)
    prepare_group(query_group)
    raw = raw_first_record(bootstrap, topic, raw_group, poll_records)
    query = query_first_record(spark, bootstrap, topic, query_group, work, poll_records)
    return {"raw_s": raw, "query_s": query["seconds"], "query_planning_s": query["planning_s"],
            "ratio": query["seconds"] / raw}
