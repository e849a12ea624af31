"""A pipeline watched by a real Prometheus, drawn: the figure of docs/operations.md.

``python -m kafka_share_eos.proving_ground.monitored_run --out docs/results/pipeline-metrics.svg``
starts the embedded broker, produces orders (some not JSON, so dead-lettered), and runs the
``kafka-share`` source in local Spark into an SQLite upsert with its metrics served
(:func:`~kafka_share_eos.serve_metrics`) and scraped every second by Debian's Prometheus
(fetched once); two batches pause their write. After the run it reads the dashboard's main
panels over Prometheus's HTTP API (``/api/v1/query_range``, one point a second), saves their
series beside the chart (``pipeline-metrics.json``) and draws the chart from that file with
:mod:`~kafka_share_eos.proving_ground.pipeline_metrics_chart`, which can draw it again alone.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from kafka_share_eos._extras import CHARTS
from kafka_share_eos.proving_ground.pipeline_metrics_chart import (
    PANELS,
    Panel,
    range_points,
    redraw,
    save_series,
)

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.launchers.prometheus import PrometheusServer

TOPIC = "orders"
QUERY = "orders"
PARTITIONS = 4
LOCK_MS = 10_000
"""The record lock, shorter than Kafka's 30 s so that a slow batch shows in the margin."""
PAUSE_S = 4.0
"""How long a slow batch's write pauses."""
TRIGGER = "1 second"
TITLE = ("A pipeline's metrics: Spark local, embedded broker, SQLite upsert, Prometheus 2.42 "
         "scraping each second")
RUN_TIMEOUT_S = 600
WARM_UP = "warm-up"
TAIL_S = 6.0
"""Seconds of the chart after the last batch settled: past the rates' window, to zero."""
LEAD_S = 5.0
"""Seconds of the chart before the first batch settled."""


@dataclass(frozen=True)
class MonitoredRun:
    """What the run did, as the journal and the strategy count it, and its metrics' panels
    with the line that says what they show."""

    orders: int
    polled: int
    redelivered: int
    batches: int
    written: int
    dead_letters: int
    day: str
    subtitle: str
    panels: list[Panel]

    def save(self, chart: Path) -> None:
        """Save the panels' series beside ``chart`` (its ``.json``) and draw ``chart`` from
        them."""
        counts = {counted.name: getattr(self, counted.name) for counted in fields(self)
                  if counted.name not in ("subtitle", "panels")}
        saved = chart.with_suffix(".json")
        save_series(saved, TITLE, self.subtitle, self.panels, counts)
        redraw(saved)


def order_values(orders: int, broken_every: int) -> list[bytes]:
    """``orders`` orders as JSON, every ``broken_every``-th not JSON."""
    return [b"{broken" if i % broken_every == broken_every - 1
            else json.dumps({"amount": i}).encode() for i in range(orders)]


class SlowOrders:
    """The orders' transform (JSON values to columns; a value that is not JSON raises, a dead
    letter), which pauses :data:`PAUSE_S` once in each batch of ``slow``, as a slow database
    would: inside the strategy, so that its batch time and the lock it holds count the pause.
    A batch run again is not paused again."""

    def __init__(self, slow: tuple[int, ...]) -> None:
        self.slow = set(slow)
        self.pause_next = False

    def writing(self, sink: Callable[[Any, int], object]) -> Callable[[Any, int], None]:
        """``sink`` as the ``foreachBatch`` function, telling this transform the batch."""
        def write(batch_df: Any, batch_id: int) -> None:
            self.pause_next = batch_id in self.slow
            self.slow.discard(batch_id)
            sink(batch_df, batch_id)
        return write

    def __call__(self, rows: pa.Table) -> pa.Table:
        if self.pause_next:
            self.pause_next = False
            time.sleep(PAUSE_S)
        decoded = [json.loads(v) for v in rows["value"].to_pylist()]
        return pa.table({"topic": rows["topic"], "partition": rows["partition"],
                         "offset": rows["offset"],
                         "amount": pa.array([int(d["amount"]) for d in decoded], pa.int64())})


def _read(rows: Any, _: int) -> None:
    rows.count()


def _panels(server: PrometheusServer, selector: str, start: float, end: float) -> list[Panel]:
    """The chart's panels from :data:`LEAD_S` before the first batch settled to ``end``: the
    seconds before it are Spark starting, not the pipeline."""
    records = range_points(server.query_range(
        f"sum(kafka_share_eos_records_consumed_total{{{selector}}})", start, end))
    first = next((t for t, value in records if value > 0), start)
    start = max(start, first - LEAD_S)
    panels = []
    for panel in PANELS:
        queries = panel.promql(selector)
        panels.append(Panel(panel.title, panel.unit, {
            name: range_points(server.query_range(promql, start, end))
            for name, promql in queries.items()}, queries))
    return panels


def run(orders: int = 400, per_trigger: int = 20, broken_every: int = 50,
        slow: tuple[int, ...] = (6, 13)) -> MonitoredRun:
    """Run the pipeline scraped by Prometheus until every order is written or dead-lettered,
    and read its metrics' panels back."""
    from confluent_kafka import Producer
    from prometheus_client import CollectorRegistry

    from kafka_share_eos import (
        DeadLetterPolicy,
        IdempotentUpsertSink,
        SqlDeadLetters,
        journal_status,
    )
    from kafka_share_eos.monitoring import PipelineMetrics, serve_metrics
    from kafka_share_eos.proving_ground.broker import EmbeddedBroker
    from kafka_share_eos.proving_ground.launchers.prometheus import PrometheusServer
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.proving_ground.streams import batch_size, share_stream, source_options
    from kafka_share_eos.source import register

    with EmbeddedBroker(topics=[f"{TOPIC}:{PARTITIONS}", f"{WARM_UP}:1"],
                        record_lock_duration_ms=LOCK_MS) as broker, \
            tempfile.TemporaryDirectory(prefix="kse-monitored-") as tmp:
        producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
        for i, value in enumerate(order_values(orders, broken_every)):
            producer.produce(TOPIC, value=value, partition=i % PARTITIONS)
        producer.produce(WARM_UP, value=b"{}")
        producer.flush(60)
        url, journal = f"sqlite:///{Path(tmp) / 'shop.db'}", Path(tmp) / "journal"
        dead = SqlDeadLetters(url, "orders_dead")
        transform = SlowOrders(slow)
        sink = IdempotentUpsertSink.sql(url, "orders", create_table=True, transform=transform,
                                        dead_letters=DeadLetterPolicy(dead), name="upsert")
        options = source_options(broker.bootstrap_servers, "orders-eos", TOPIC, journal,
                                 **batch_size(per_trigger),
                                 lockDurationMs=str(LOCK_MS))
        spark = local_spark_session("kafka-share-eos-monitored-run")
        register(spark)
        # Spark's first batch starts its Python workers, over 20 s on a loaded machine: longer
        # than the lock, its records would come back and hide the run's own batches. A query
        # of its own pays for that start.
        warm_up = source_options(broker.bootstrap_servers, WARM_UP, WARM_UP,
                                 Path(tmp) / "warm-up", availableNowIdleMs="500")
        (share_stream(spark, warm_up).writeStream.foreachBatch(_read)
         .trigger(availableNow=True).option("checkpointLocation", str(Path(tmp) / "warm-cp"))
         .start().awaitTermination(RUN_TIMEOUT_S))
        selector = f'query="{QUERY}"'
        with serve_metrics(PipelineMetrics(QUERY, options, sink), port=0, addr="127.0.0.1",
                           spark=spark, registry=CollectorRegistry()) as endpoint, \
                PrometheusServer([f"127.0.0.1:{endpoint.port}"]) as server:
            server.wait_for("the first scrape", lambda: server.query(
                f"kafka_share_eos_batches_acknowledged_total{{{selector}}}"))
            start = time.time()
            # A trigger a second, as a streaming pipeline runs: each batch's gauges stay up
            # for a scrape to read.
            query = (share_stream(spark, options).writeStream
                     .foreachBatch(transform.writing(sink)).queryName(QUERY)
                     .trigger(processingTime=TRIGGER)
                     .option("checkpointLocation", str(Path(tmp) / "cp")).start())
            try:
                server.wait_for("every order applied", lambda: query.exception() or (
                    sink.totals.rows_written + sink.totals.dead_lettered >= orders),
                    timeout_s=RUN_TIMEOUT_S)
                failure = query.exception()
                if failure is not None:
                    raise failure
                server.wait_for("the last batch acknowledged", lambda: server.query(
                    f"kafka_share_eos_records_acknowledged_total{{{selector}}}"
                    f" == {sink.totals.rows_in}"))
            finally:
                query.stop()
            # A rate window past the last batch, so the lines end at the run's end.
            end = time.time() + TAIL_S
            server.wait_for("a scrape past the end", lambda: server.query(
                f"timestamp(kafka_share_eos_records_consumed_total{{{selector}}}) >= {end}"))
            panels = _panels(server, selector, start - 2, end)
        spark.stop()
        totals, journaled = sink.totals, journal_status(str(journal)).totals
        letters = dead.read().num_rows
        sink.close()
        dead.close()
    day = datetime.now(UTC).strftime("%Y-%m-%d")
    subtitle = (f"{orders} orders, {letters} of them not JSON (dead-lettered); "
                f"{journaled.records} records polled ({journaled.redelivered} redelivered) in "
                f"{totals.batches} batches of up to {per_trigger}, {len(slow)} paused "
                f"{PAUSE_S:.0f} s; {day}")
    return MonitoredRun(orders, journaled.records, journaled.redelivered, totals.batches,
                        totals.rows_written, letters, day, subtitle, panels)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=Path("pipeline-metrics.svg"))
    parser.add_argument("--orders", type=int, default=400)
    args = parser.parse_args()
    # Before the run, not after its minutes: the chart is what the run is for.
    CHARTS.require("the monitored run's chart")
    result = run(args.orders)
    result.save(args.out)
    print(f"{args.out} and its series {args.out.with_suffix('.json')}: {result.orders} "
          f"orders, {result.polled} records polled ({result.redelivered} redelivered) in "
          f"{result.batches} batches, {result.written} written, {result.dead_letters} dead "
          "letters")


if __name__ == "__main__":
    main()
