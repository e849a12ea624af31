"""What the source benchmarks share: producing their records, where their journals go, starting
a ``kafka-share`` query into Spark's ``noop`` sink, and timing it from its progress reports."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_share_eos.proving_ground.streams import share_stream
from kafka_share_eos.source.options import STORAGE_PREFIX
from kafka_share_eos.storage import Location


def produce(bootstrap: str, topic: str, records: int, partitions: int, value_bytes: int) -> None:
    """Produce ``records`` records of ``value_bytes`` bytes round-robin over the partitions.

    Raises:
        RuntimeError: they were not all acknowledged by the broker within 60 s.
    """
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    value = bytes(value_bytes)
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=b"key-%d" % i, value=value, partition=i % partitions)
                break
            except BufferError:
                # The client's queue is full while the broker is busy: serve delivery reports.
                producer.poll(0.1)
        if i % 10_000 == 0:
            producer.poll(0)
    if producer.flush(60):
        raise RuntimeError("the benchmark records were not all produced within 60 s")


@dataclass(frozen=True)
class Journals:
    """Where a benchmark's queries keep their journals, one under ``root`` each: a local
    directory, or an object store's URL with the store's settings."""

    root: str | Path
    storage: Mapping[str, str] = field(default_factory=dict, repr=False)

    def location(self, name: str) -> Location:
        """The journal named ``name``, with the store's settings."""
        return Location(f"{str(self.root).rstrip('/')}/{name}", self.storage)

    def source_options(self) -> dict[str, str]:
        """The store's settings as the source's ``storage.*`` options: its runner and every
        executor open the store with them."""
        return {STORAGE_PREFIX + key: value for key, value in self.storage.items()}


def start_query(spark: Any, options: dict[str, str], checkpoint: Path) -> Any:
    """Start an ``availableNow`` query of the ``kafka-share`` source into the ``noop`` sink."""
    return (
        share_stream(spark, options).writeStream.format("noop").trigger(availableNow=True)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def batches_with_data(query: Any) -> list[dict[str, Any]]:
    """The progress reports of the query's micro-batches that read records (set
    ``spark.sql.streaming.numRecentProgressUpdates`` high enough to keep them all)."""
    return [p for p in query.recentProgress if input_rows(p)]


def input_rows(progress: dict[str, Any]) -> int:
    """Rows one micro-batch read; a Spark Connect server's progress gives them per source
    only."""
    rows = progress["numInputRows"]
    return int(rows) if rows is not None else sum(
        int(source["numInputRows"]) for source in progress["sources"])


def rows_read(progress: list[dict[str, Any]]) -> int:
    """Rows the micro-batches of ``progress`` read."""
    return sum(input_rows(p) for p in progress)


def instant(timestamp: str) -> float:
    """Seconds since the epoch of a progress's ISO 8601 ``timestamp``."""
    return dt.datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


def stream_window(progress: list[dict[str, Any]]) -> tuple[float, float]:
    """Wall-clock start of the first micro-batch of ``progress`` and end of its last one."""
    last = progress[-1]
    return (instant(progress[0]["timestamp"]),
            instant(last["timestamp"]) + last["durationMs"]["triggerExecution"] / 1000.0)


def running_rate(progress: list[dict[str, Any]], records: int, seconds: float) -> dict[str, float]:
    """``records`` over the ``seconds`` of :func:`stream_window` less the first micro-batch's
    planning, which holds the source's start-up (a share group's join, one heartbeat interval
    on Apache Kafka; Spark's Kafka source looking up offsets): ``start_s`` and the
    ``running_records_per_second`` of a query that has started."""
    start = progress[0]["durationMs"].get("latestOffset", 0) / 1000.0
    return {"start_s": start, "running_records_per_second": records / (seconds - start)}
