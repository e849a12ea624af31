"""``kafka-share-eos demo``: an order stream applied exactly once, on one machine, nothing running.

The demo starts the embedded broker, produces orders, and runs a Spark pipeline through the
``kafka-share`` source into an SQLite table (or a given SQL URL) and a Delta table, both through
:class:`IdempotentUpsertSink`. It forces redeliveries the way production gets them: the pipeline
fails once after writing a batch (Spark replays that batch from the journal on restart, and the
broker redelivers its records because they were never acknowledged), then verifies the sinks.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from kafka_share_eos.sharegroup import EmbeddedBroker

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from kafka_share_eos.strategies import IdempotentUpsertSink

_TOPIC = "orders"
# Records the crashed query's client had fetched but not handed out stay locked to it after it
# left until their lock expires: the restarted drain idles longer than a lock to get them back.
_RECORD_LOCK_MS = 10_000
_ORDER_SCHEMA = "order_id BIGINT, customer STRING, amount_cents BIGINT"


class SimulatedCrash(RuntimeError):
    """Raised once by the demo pipeline after it has written a batch."""


@dataclass
class _Pipeline:
    """The foreachBatch target: both sinks, live progress, and one simulated crash."""

    sinks: list[IdempotentUpsertSink]
    progress: Progress
    task: TaskID
    crash_on_batch: int | None
    batches: int = 0
    records: int = 0
    redelivered: int = 0
    absorbed: dict[str, int] = field(default_factory=dict)

    def __call__(self, batch_df: DataFrame, batch_id: int) -> None:
        from pyspark.sql import functions as F

        orders = batch_df.select(
            "topic",
            "partition",
            "offset",
            "deliveryCount",
            F.from_json(F.col("value").cast("string"), _ORDER_SCHEMA).alias("order"),
        ).select("topic", "partition", "offset", "deliveryCount", "order.*")
        table = orders.toArrow()
        redelivered = sum(1 for count in table.column("deliveryCount").to_pylist() if count > 1)
        data = table.drop_columns(["deliveryCount"])
        reports = [sink.apply(data, batch_id) for sink in self.sinks]
        for sink, report in zip(self.sinks, reports, strict=True):
            self.absorbed[sink.name] = self.absorbed.get(sink.name, 0) + report.duplicates
        # Every sink writes the same new orders; the bar follows the first.
        written = reports[0].rows_written
        self.batches += 1
        self.records += table.num_rows
        self.redelivered += redelivered
        self.progress.update(
            self.task,
            advance=written,
            batches=self.batches,
            records=self.records,
            redelivered=self.redelivered,
            absorbed=" / ".join(f"{name} {n}" for name, n in self.absorbed.items()),
        )
        self.progress.console.print(
            f"batch {batch_id:>3}: {table.num_rows:>6} records, {redelivered:>5} redelivered, "
            f"{written:>6} new orders written"
        )
        if batch_id == self.crash_on_batch:
            self.crash_on_batch = None
            raise SimulatedCrash(f"simulated crash after writing batch {batch_id}")


def _progress(console: Console) -> Progress:
    return Progress(
        TextColumn("orders applied"),
        BarColumn(bar_width=20),
        MofNCompleteColumn(),
        TextColumn(
            "batches {task.fields[batches]} · records {task.fields[records]} · redelivered "
            "{task.fields[redelivered]} · absorbed {task.fields[absorbed]}"
        ),
        TimeElapsedColumn(),
        console=console,
    )


def _produce(bootstrap: str, orders: int, seed: int) -> dict[int, int]:
    from confluent_kafka import Producer

    rng = random.Random(seed)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    amounts: dict[int, int] = {}
    for order_id in range(orders):
        amount = rng.randint(100, 50_000)
        amounts[order_id] = amount
        value = {"order_id": order_id, "customer": f"c{rng.randint(1, 50)}", "amount_cents": amount}
        producer.produce(_TOPIC, key=str(order_id).encode(), value=json.dumps(value).encode())
        producer.poll(0)
    producer.flush(30)
    return amounts


def _run_query(
    spark: SparkSession, bootstrap: str, work: Path, pipeline: _Pipeline, per_trigger: int
) -> None:
    import kafka_share_eos
    from kafka_share_eos.testing.spark import wait_for_source_runners

    kafka_share_eos.register(spark)
    stream = (
        spark.readStream.format("kafka-share")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("kafka.share.group.id", "orders-demo")
        .option("subscribe", _TOPIC)
        .option("journalPath", str(work / "journal"))
        .option("maxRecordsPerTrigger", str(per_trigger))
        .option("availableNowIdleMs", str(_RECORD_LOCK_MS + 2000))
        .load()
    )
    query = (
        stream.writeStream.foreachBatch(pipeline)
        .trigger(availableNow=True)
        .option("checkpointLocation", str(work / "checkpoint"))
        .start()
    )
    try:
        query.awaitTermination()
    except Exception as exc:  # the query surfaces the crash wrapped in Spark's own error
        if "simulated crash" not in str(exc):
            raise
        # The restart must not share the group with the crashed query's departing consumer.
        wait_for_source_runners(spark)
        pipeline.progress.console.print(
            "[yellow]the pipeline crashed after writing a batch (simulated crash); restarting it "
            "on the same checkpoint[/]"
        )


def _verify(sql_url: str, delta_path: Path, expected: dict[int, int]) -> list[tuple[str, int, int]]:
    """Per sink: (name, rows, orders whose amount is wrong or missing or doubled)."""
    import pyarrow as pa
    import sqlalchemy as sa
    from deltalake import DeltaTable, QueryBuilder

    engine = sa.create_engine(sql_url)
    with engine.connect() as conn:
        sql_rows = conn.execute(sa.text("SELECT order_id, amount_cents FROM orders")).all()
    engine.dispose()
    delta_rows = pa.table(
        QueryBuilder()
        .register("orders", DeltaTable(str(delta_path)))
        .execute("SELECT order_id, amount_cents FROM orders")
    ).to_pylist()
    results = []
    for name, rows in (
        ("sql", [(r[0], r[1]) for r in sql_rows]),
        ("delta", [(r["order_id"], r["amount_cents"]) for r in delta_rows]),
    ):
        seen: dict[int, list[int]] = {}
        for order_id, amount in rows:
            seen.setdefault(order_id, []).append(amount)
        wrong = sum(1 for oid, amt in expected.items() if seen.get(oid) != [amt])
        results.append((name, len(rows), wrong))
    return results


def demo(
    orders: Annotated[int, typer.Option(min=1, help="Orders to produce.")] = 5_000,
    per_trigger: Annotated[int, typer.Option(min=1, help="Records per micro-batch.")] = 1_000,
    sql_url: Annotated[
        str | None,
        typer.Option(
            "--sql-url",
            "--postgres-url",
            help="SQLAlchemy URL of the SQL sink, e.g. postgresql+psycopg://user@host/db "
            "(default: an SQLite file in the working directory).",
        ),
    ] = None,
    workdir: Annotated[
        Path | None, typer.Option(help="Where journal, checkpoint and tables go (default: temp).")
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of the generated orders.")] = 7,
) -> None:
    """Run an order pipeline on embedded defaults, force redeliveries, verify exactly-once."""
    from kafka_share_eos.strategies import IdempotentUpsertSink
    from kafka_share_eos.testing.spark import local_spark_session

    console = Console()
    work = workdir or Path(tempfile.mkdtemp(prefix="kafka-share-eos-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    sql_target = sql_url or f"sqlite:///{work / 'orders.db'}"
    delta_path = work / "orders-delta"
    started = time.monotonic()
    with EmbeddedBroker([f"{_TOPIC}:4"], record_lock_duration_ms=_RECORD_LOCK_MS) as broker:
        console.print(f"[green]embedded broker[/] at {broker.bootstrap_servers}; working in {work}")
        expected = _produce(broker.bootstrap_servers, orders, seed)
        console.print(f"produced {len(expected)} orders to '{_TOPIC}'")
        with console.status("starting Spark"):
            spark = local_spark_session("kafka-share-eos-demo")
        sinks = [
            IdempotentUpsertSink.sql(sql_target, "orders", create_table=True, name="sql"),
            IdempotentUpsertSink.delta(delta_path, app_id="orders-demo", name="delta"),
        ]
        with _progress(console) as progress:
            task = progress.add_task(
                "orders", total=len(expected), batches=0, records=0, redelivered=0, absorbed="0"
            )
            pipeline = _Pipeline(sinks, progress, task, crash_on_batch=1)
            _run_query(spark, broker.bootstrap_servers, work, pipeline, per_trigger)
            _run_query(spark, broker.bootstrap_servers, work, pipeline, per_trigger)
        spark.stop()
    results = _verify(sql_target, delta_path, expected)
    summary = Table(title=f"kafka-share-eos demo ({time.monotonic() - started:.0f} s)")
    for column in (
        "sink",
        "orders produced",
        "rows",
        "records seen",
        "redelivered",
        "duplicates absorbed",
        "exactly once",
    ):
        summary.add_column(column)
    ok = True
    for name, rows, wrong in results:
        exact = wrong == 0 and rows == len(expected)
        ok &= exact
        summary.add_row(
            name,
            str(len(expected)),
            str(rows),
            str(pipeline.records),
            str(pipeline.redelivered),
            str(pipeline.absorbed.get(name, 0)),
            "[green]verified[/]" if exact else f"[red]NO: {wrong} orders wrong[/]",
        )
    console.print(summary)
    if not ok:
        raise typer.Exit(1)
