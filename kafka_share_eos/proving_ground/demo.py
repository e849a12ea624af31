"""``kafka-share-eos demo``: an order stream applied exactly once, on one machine, nothing running.

The demo starts the embedded broker, produces orders, and runs a Spark pipeline through the
``kafka-share`` source into an SQLite table (or a given SQL URL) and a Delta table, both through
:class:`IdempotentUpsertSink`. It forces redeliveries the way production gets them: the pipeline
fails once after writing a batch (Spark replays that batch from the journal on restart, and the
broker redelivers its records because they were never acknowledged), then verifies the sinks.

With ``--remote sc://...`` the pipeline runs in a Spark Connect session at that URL instead of a
local Spark: the server runs the source and, in its ``foreachBatch`` worker, the sinks, so its
Python needs the toolkit, and it must reach the embedded broker and the working directory (a
server on this machine does). The URL is passed to PySpark as given and never printed: only its
scheme, host and port are, since its parameters may hold a token.
"""

from __future__ import annotations

import json
import random
import re
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from kafka_share_eos._libs import deltalake, sa, spark_functions, spark_sql
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.broker import EmbeddedBroker
from kafka_share_eos.proving_ground.console import CrashOnce, RunConsole
from kafka_share_eos.proving_ground.streams import batch_size, share_stream, source_options
from kafka_share_eos.sinks.sql_engine import parse_sql_url

if TYPE_CHECKING:
    import pyarrow as pa

    from kafka_share_eos.strategies import IdempotentUpsertSink

_TOPIC = "orders"
# Records the crashed query's client had fetched but not handed out stay locked to it after it
# left until their lock expires: the restarted drain idles longer than a lock to get them back.
_RECORD_LOCK_MS = 10_000
_ORDER_SCHEMA = "order_id BIGINT, customer STRING, amount_cents BIGINT"


@dataclass
class _Pipeline:
    """The foreachBatch target: both sinks and live progress. Every record seen is counted once
    as new, replayed (in a batch Spark ran before) or redelivered (the broker sent it again), so
    the counts add up to the records seen."""

    sinks: list[IdempotentUpsertSink]
    progress: Progress | None
    """None in a Connect session, where the pipeline runs in the server's worker."""
    task: TaskID | None
    batches: int = 0
    records: int = 0
    new: int = 0
    replayed: int = 0
    redelivered: int = 0
    absorbed: dict[str, int] = field(default_factory=dict)
    _seen: set[tuple[int, int]] = field(default_factory=set)
    _batch_ids: set[int] = field(default_factory=set)

    def __call__(self, batch_df: spark_sql.DataFrame, batch_id: int) -> None:

        orders = batch_df.select(
            "topic",
            "partition",
            "offset",
            spark_functions.from_json(
                spark_functions.col("value").cast("string"), _ORDER_SCHEMA
            ).alias("order"),
        ).select("topic", "partition", "offset", "order.*")
        table = orders.toArrow()
        reports = [sink.apply(table, batch_id) for sink in self.sinks]
        for sink, report in zip(self.sinks, reports, strict=True):
            self.absorbed[sink.name] = self.absorbed.get(sink.name, 0) + report.duplicates
        self._count(table, batch_id)
        if self.progress is None or self.task is None:
            return
        self.progress.update(
            self.task,
            # Every sink writes the same new orders; the bar follows the first.
            advance=reports[0].rows_written,
            batches=self.batches,
            replayed=self.replayed,
            redelivered=self.redelivered,
        )

    def _count(self, table: pa.Table, batch_id: int) -> None:
        identities = list(zip(table.column("partition").to_pylist(),
                              table.column("offset").to_pylist(), strict=True))
        self.batches += 1
        self.records += len(identities)
        if batch_id in self._batch_ids:
            self.replayed += len(identities)
            return
        self._batch_ids.add(batch_id)
        again = sum(1 for identity in identities if identity in self._seen)
        self.redelivered += again
        self.new += len(identities) - again
        self._seen.update(identities)


def _progress(console: RunConsole) -> Progress:
    return console.progress(
        TextColumn("orders"),
        BarColumn(bar_width=10),
        MofNCompleteColumn(),
        TextColumn(
            "{task.fields[batches]} batches · {task.fields[replayed]} replayed · "
            "{task.fields[redelivered]} redelivered"
        ),
        TimeElapsedColumn(),
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
    console: RunConsole,
    spark: spark_sql.SparkSession,
    bootstrap: str,
    work: Path,
    pipeline: _Pipeline,
    per_trigger: int,
) -> None:
    import kafka_share_eos

    kafka_share_eos.register(spark)
    stream = share_stream(spark, source_options(
        bootstrap, "orders-demo", _TOPIC, work / "journal",
        **batch_size(per_trigger),
        availableNowIdleMs=str(_RECORD_LOCK_MS + 2000),
    ))
    # Fails once after batch 1 reached both sinks: Spark replays the batch on restart and the
    # broker redelivers its records, never acknowledged. The restart gets the pipeline alone: a
    # Connect session pickles the function at every start, the crash's spent state included.
    attempts = iter([CrashOnce(pipeline, 1)])
    console.drain(
        lambda: stream.writeStream.foreachBatch(next(attempts, pipeline))
        .trigger(availableNow=True)
        .option("checkpointLocation", str(work / "checkpoint"))
        .start()
    )


def _verify(sql_url: str, delta_path: Path, expected: dict[int, int]) -> list[tuple[str, int, int]]:
    """Per sink: (name, rows, orders whose amount is wrong or missing or doubled)."""
    import pyarrow as pa

    engine = sa.create_engine(sql_url)
    with engine.connect() as conn:
        sql_rows = conn.execute(sa.text("SELECT order_id, amount_cents FROM orders")).all()
    engine.dispose()
    delta_rows = pa.table(
        deltalake.QueryBuilder()
        .register("orders", deltalake.DeltaTable(str(delta_path)))
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


def _refuse_before_starting(sql_url: str | None, workdir: Path | None) -> None:
    """Refuse a SQL URL of the wrong form and a working directory that is a file before the
    broker and Spark start, rather than after.

    Raises:
        ConfigurationError: either of them.
    """
    if sql_url is not None:
        try:
            parse_sql_url(sql_url)
        except ConfigurationError as error:
            raise ConfigurationError(f"--sql-url: {error}") from error
    if workdir is not None and workdir.exists() and not workdir.is_dir():
        raise ConfigurationError(f"--workdir {workdir}: a file, not a directory")


def demo(
    orders: Annotated[int, typer.Option(min=1, metavar="N", help="Orders to produce.")] = 5_000,
    per_trigger: Annotated[
        int, typer.Option(min=1, metavar="N", help="Records per micro-batch.")
    ] = 1_000,
    sql_url: Annotated[
        str | None,
        typer.Option(
            "--sql-url",
            "--postgres-url",
            metavar="URL",
            help="SQLAlchemy URL of the SQL sink, a postgresql+psycopg:// one for PostgreSQL "
            "(default: an SQLite file in the working directory).",
        ),
    ] = None,
    workdir: Annotated[
        Path | None,
        typer.Option(metavar="PATH",
                     help="Where journal, checkpoint and tables go (default: temp)."),
    ] = None,
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of the generated orders.")] = 7,
    remote: Annotated[
        str | None,
        typer.Option(
            "--remote",
            metavar="URL",
            help="Run the pipeline in a Spark Connect session at this URL (sc://host:port, "
            "with ;token=... and ;use_ssl=true as the server needs) instead of a local Spark. "
            "The server's Python needs kafka-share-eos, and the server must reach the working "
            "directory and this machine's embedded broker. The URL is never printed.",
        ),
    ] = None,
) -> None:
    """Run an order pipeline on embedded defaults, force redeliveries, verify exactly-once."""
    from kafka_share_eos.strategies import IdempotentUpsertSink

    _refuse_before_starting(sql_url, workdir)
    work = workdir or Path(tempfile.mkdtemp(prefix="kafka-share-eos-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    sql_target = sql_url or f"sqlite:///{work / 'orders.db'}"
    delta_path = work / "orders-delta"
    started = time.monotonic()
    with RunConsole("kafka-share-eos demo", work / "spark.log") as console, ExitStack() as stack:
        with EmbeddedBroker([f"{_TOPIC}:4"], record_lock_duration_ms=_RECORD_LOCK_MS) as broker:
            console.stage(f"embedded broker at {broker.bootstrap_servers}; working in {work}")
            expected = _produce(broker.bootstrap_servers, orders, seed)
            console.stage(f"produced {len(expected)} orders to '{_TOPIC}'")
            spark = (console.spark("kafka-share-eos-demo") if remote is None
                     else stack.enter_context(_connect_session(console, remote)))
            sinks = [
                IdempotentUpsertSink.sql(sql_target, "orders", create_table=True, name="sql"),
                IdempotentUpsertSink.delta(delta_path, app_id="orders-demo", name="delta"),
            ]
            with _progress(console) as progress:
                task = progress.add_task(
                    "orders", total=len(expected), batches=0, replayed=0, redelivered=0
                )
                local = remote is None
                pipeline = _Pipeline(sinks, progress if local else None, task if local else None)
                _run_query(console, spark, broker.bootstrap_servers, work, pipeline, per_trigger)
        stack.close()
        ok = _summary(console, _verify(sql_target, delta_path, expected),
                      pipeline if remote is None else None, len(expected),
                      time.monotonic() - started)
    if not ok:
        raise typer.Exit(1)


@contextmanager
def _connect_session(console: RunConsole, remote: str) -> Iterator[spark_sql.SparkSession]:
    """A Spark Connect session at ``remote``, stopped when the block ends."""
    with console.waiting("connecting to Spark Connect"):
        spark = spark_sql.SparkSession.builder.remote(remote).create()
    console.stage(f"Spark Connect session at {shown_url(remote)} (Spark {spark.version})")
    try:
        yield spark
    finally:
        for query in spark.streams.active:
            query.stop()
        spark.stop()


def shown_url(remote: str) -> str:
    """What of a Spark Connect URL may be printed: scheme, host and port, without its
    parameters (``;token=...``) and anything else after them."""
    found = re.match(r"[a-z]+://[^/;?#@]*", remote)
    return found.group(0) if found else "the given URL"


def _summary(
    console: RunConsole,
    results: list[tuple[str, int, int]],
    pipeline: _Pipeline | None,
    produced: int,
    seconds: float,
) -> bool:
    """Print the verification table; whether every sink holds every order exactly once.
    Without ``pipeline`` (a Connect session: it ran in the server's worker) the counts of what
    it saw stay blank."""
    summary = Table(title=f"kafka-share-eos demo: {produced} orders in {seconds:.0f} s",
                    caption="seen = new + replayed + redelivered · absorbed: repeats not applied "
                    "again" if pipeline is not None else None)
    for column in ("sink", "rows", "seen", "new", "replayed", "redelivered", "absorbed",
                   "exactly once"):
        summary.add_column(column, no_wrap=True)
    ok = True
    for name, rows, wrong in results:
        exact = wrong == 0 and rows == produced
        ok &= exact
        seen = ((pipeline.records, pipeline.new, pipeline.replayed, pipeline.redelivered,
                 pipeline.absorbed.get(name, 0)) if pipeline is not None else ())
        summary.add_row(
            name,
            str(rows),
            *(map(str, seen) if seen else ("",) * 5),
            "[green]verified[/]" if exact else f"[red]NO: {wrong} orders wrong[/]",
        )
    console.console.print(summary)
    return ok
