"""Every Python block of the README and the docs runs, as a reader would run it, on the suite's
own parts: an embedded broker per block (``broker:9092``), a fresh database of the suite's
PostgreSQL, Delta tables and paths under a temporary directory, the session's local Spark.

Each runnable block has a spec below: what it needs that the page leaves to the reader (the
names it uses without defining them, the records on its topics) and a check on what it did,
on data wherever the block writes data. A block marked ``compile-only`` in its page is compiled
and its imports are run (tests/support/helpers/doc_blocks.py).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.batches import source_rows
from helpers.delta import read_delta
from helpers.doc_blocks import (
    ROOT,
    Block,
    ToTestResources,
    documents,
    free_names,
    imports_only,
    python_blocks,
)

import kafka_share_eos
from kafka_share_eos import EmbeddedBroker
from kafka_share_eos.proving_ground.launchers.spark import wait_for_source_runners
from kafka_share_eos.proving_ground.verify.kafka_targets import read_topic

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

pytestmark = pytest.mark.timeout(300)

RECORDS = 12


@dataclass
class DocRun:
    """What one chain of blocks runs on, started only when a block needs it."""

    request: pytest.FixtureRequest
    tmp: Path
    broker: EmbeddedBroker
    produced: dict[str, list[bytes]] = field(default_factory=dict)
    block: Block | None = None
    _postgres_url: str | None = None
    _queries_before: set[str] | None = None

    @property
    def spark(self) -> SparkSession:
        session: SparkSession = self.request.getfixturevalue("spark")
        if self._queries_before is None:
            self._queries_before = {q.id for q in session.streams.active}
        return session

    @property
    def postgres_url(self) -> str:
        if self._postgres_url is None:
            self._postgres_url = str(self.request.getfixturevalue("postgres_url"))
        return self._postgres_url

    def path(self, documented: str) -> Path:
        """Where a path the page names lives in this run (see ToTestResources)."""
        return self.tmp / documented.lstrip("/")

    def topic(self, name: str, values: list[bytes], partitions: int = 4) -> None:
        self.broker.create_topic(name, partitions)
        produce(self.broker.bootstrap_servers, name, values, partitions=partitions)
        self.produced[name] = values

    def stream(self, topic: str, values: list[bytes]) -> DataFrame:
        """The kafka-share source on a topic holding ``values``: the ``df`` a page starts from."""
        self.topic(topic, values)
        kafka_share_eos.register(self.spark)
        return (self.spark.readStream.format("kafka-share")
                .option("kafka.bootstrap.servers", self.broker.bootstrap_servers)
                .option("kafka.share.group.id", f"{topic}-docs")
                .option("subscribe", topic)
                .option("journalPath", str(self.tmp / "given-stream" / "journal"))
                .load())

    def started(self) -> list[StreamingQuery]:
        if self._queries_before is None:
            return []
        return [q for q in self.spark.streams.active if q.id not in self._queries_before]

    def wait_until(self, condition: Callable[[], bool], what: str, timeout: float = 150) -> None:
        """Wait on the block's queries (a failed one raises its error here) until ``condition``
        holds."""
        queries = self.started()
        if not queries:  # none running: the block waited for its own (availableNow)
            assert condition(), f"no streaming query runs, and not {what}"
            return
        waited = 0.0
        while not condition():
            assert waited < timeout, f"{what}: not within {timeout:.0f} s"
            for query in queries:
                query.awaitTermination(0.25)
            waited += 0.25

    def stop_queries(self) -> None:
        queries = self.started()
        for query in queries:
            query.stop()
        if queries:
            wait_for_source_runners(self.spark)


def _count(url: str, table: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            if not sa.inspect(conn).has_table(table):
                return 0
            return int(conn.execute(sa.text(f'SELECT count(*) FROM "{table}"')).scalar_one())
    finally:
        engine.dispose()


def _orders(n: int = RECORDS) -> list[bytes]:
    return [b'{"order_id": %d}' % i for i in range(n)]


def _upserted_once(table: str, topic: str) -> Callable[[DocRun, dict[str, Any]], None]:
    """Check: every record of ``topic`` is in the Postgres ``table`` once, with its value."""

    def check(run: DocRun, _: dict[str, Any]) -> None:
        run.wait_until(lambda: _count(run.postgres_url, table) >= RECORDS,
                       f"{RECORDS} rows in {table}")
        run.stop_queries()
        engine = sa.create_engine(run.postgres_url)
        with engine.connect() as conn:
            query = f'SELECT "partition", "offset", value FROM "{table}"'
            rows = conn.execute(sa.text(query)).all()
        engine.dispose()
        assert len({(r[0], r[1]) for r in rows}) == len(rows) == RECORDS
        assert sorted(bytes(r[2]) for r in rows) == sorted(run.produced[topic])

    return check


def _identity_rows(identities: list[tuple[int, int]]) -> pa.Table:
    """Rows as the source hands them to a strategy, for ``(partition, offset)`` identities."""
    return source_rows(
        key=None, value=b"{}", topic="orders",
        partition=[p for p, _ in identities], offset=[o for _, o in identities],
        timestamp=0, timestampType=0, deliveryCount=1,
    )


def _report_of_a_batch_with_each_kind_of_row(run: DocRun, names: dict[str, Any]) -> None:
    # Two records the stream applied, two new ones, one of them twice.
    report = names["report"]
    assert (report.rows_in, report.dead_lettered, report.duplicates_in_batch,
            report.already_applied, report.rows_written) == (5, 0, 1, 2, 2)
    assert report.rows_in == (report.dead_lettered + report.duplicates_in_batch
                              + report.already_applied + report.rows_written)
    assert names["sink"].last_report is report
    assert _count(run.postgres_url, "events") == RECORDS + 2


def _given_arrow_table(run: DocRun) -> dict[str, Any]:
    engine = sa.create_engine(run.postgres_url)
    with engine.connect() as conn:
        applied = conn.execute(sa.text('SELECT "partition", "offset" FROM events LIMIT 2')).all()
    engine.dispose()
    new = [(0, 10_000), (0, 10_001), (0, 10_001)]
    return {"arrow_table": _identity_rows([(r[0], r[1]) for r in applied] + new)}


def _versions_decide(run: DocRun, names: dict[str, Any]) -> None:
    sink = names["sink"]
    first = sink.apply(pa.table({"account_id": [1, 1, 2], "seq": [2, 1, 1],
                                 "balance": [20, 10, 5]}), 0)
    older = sink.apply(pa.table({"account_id": [1], "seq": [1], "balance": [99]}), 1)
    assert (first.rows_written, first.duplicates_in_batch) == (2, 1)
    assert (older.already_applied, older.rows_written) == (1, 0)
    with names["engine"].connect() as conn:
        stored = conn.execute(sa.text("SELECT balance FROM balances WHERE account_id = 1"))
        assert stored.scalar_one() == 20


def _documented_columns() -> list[str]:
    text = (ROOT / "docs" / "strategies.md").read_text()
    sentence = re.search(r"The source's columns are (.*?)\.", text, re.DOTALL)
    assert sentence, "docs/strategies.md no longer lists the source's columns"
    return re.findall(r"`(\w+)`", sentence.group(1))


def _has_the_documented_columns(run: DocRun, names: dict[str, Any]) -> None:
    df = names["df"]
    assert df.isStreaming
    assert df.columns == _documented_columns()


def _deduplicated_into_delta(run: DocRun, names: dict[str, Any]) -> None:
    table = run.path("/lake/tables/orders")
    run.wait_until(lambda: (table / "_delta_log").exists()
                   and read_delta(str(table)).num_rows >= RECORDS,
                   f"{RECORDS} rows appended to the Delta table")
    (query,) = run.started()
    run.stop_queries()
    rows = read_delta(str(table))
    assert sorted(rows["value"].to_pylist()) == sorted(run.produced["orders"])
    # configuration.md: without an app_id the ledger records batches under the query's id.
    assert names["store"].ledger.app_id == f"kafka-share-eos/dedup:{query.id}"


PAYMENTS = [json.dumps({"payment_id": i, "amount": 10 * i}).encode() for i in range(RECORDS - 2)]


def _given_payments_and_url(run: DocRun) -> dict[str, Any]:
    values = [*PAYMENTS[:4], b"not json", *PAYMENTS[4:], b'{"amount": 3}']
    return {"url": f"sqlite:///{run.tmp / 'payments.db'}", "stream": run.stream("payments", values)}


def _bad_payments_dead_lettered(run: DocRun, names: dict[str, Any]) -> None:
    url = names["url"]
    run.wait_until(lambda: _count(url, "payments") + _count(url, "payments_dead") >= RECORDS,
                   "every payment applied or dead-lettered")
    run.stop_queries()
    assert _count(url, "payments") == len(PAYMENTS)
    assert _count(url, "payments_dead") == 2
    metrics = run.path("/var/log/payments/strategy-metrics.jsonl").read_text().splitlines()
    assert sum(json.loads(line)["dead_lettered"] for line in metrics) == 2


def _hello_received(run: DocRun, names: dict[str, Any]) -> None:
    assert names["received"] == [b"hello"]


def _given_output_topic(run: DocRun) -> dict[str, Any]:
    """The sink's output topic: a sink refuses one that does not exist."""
    run.broker.create_topic("orders-enriched", 1)
    return {}


def _given_enrich(run: DocRun) -> dict[str, Any]:
    run.topic("orders", _orders())
    _given_output_topic(run)
    run.spark  # noqa: B018 - the block starts a query on the session

    def enrich(rows: pa.Table) -> pa.Table:
        upper = pa.array([v.upper() for v in rows["value"].to_pylist()], pa.binary())
        return rows.set_column(rows.schema.get_field_index("value"), "value", upper)

    return {"enrich": enrich}


def _enriched_once(run: DocRun, names: dict[str, Any]) -> None:
    bootstrap = run.broker.bootstrap_servers
    run.wait_until(lambda: len(read_topic(bootstrap, "orders-enriched")) >= RECORDS,
                   f"{RECORDS} records in orders-enriched")
    run.stop_queries()
    names["sink"].close()
    values = [m.value() for m in read_topic(bootstrap, "orders-enriched")]
    assert sorted(values) == sorted(v.upper() for v in run.produced["orders"])


def _is(name: str, cls: str) -> Callable[[DocRun, dict[str, Any]], None]:
    def check(run: DocRun, names: dict[str, Any]) -> None:
        assert isinstance(names[name], getattr(kafka_share_eos, cls))

    return check


def _closed_dedup_store_of_a_topic_sink(run: DocRun, names: dict[str, Any]) -> None:
    store = names["store"]
    assert isinstance(store, kafka_share_eos.CheckpointDedupStore)
    assert isinstance(store.sink, kafka_share_eos.KafkaTopicSink)
    store.sink.close()


def _upserted_into_iceberg(run: DocRun, names: dict[str, Any]) -> None:
    run.stop_queries()
    rows = names["rows"]
    assert len(set(zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(),
                       strict=True))) == rows.num_rows == RECORDS
    assert sorted(rows["value"].to_pylist()) == sorted(run.produced["orders"])
    assert (run.tmp / "lake" / "iceberg" / "catalog.db").exists()


def _accounts(run: DocRun) -> None:
    engine = sa.create_engine(run.postgres_url)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE accounts (id int PRIMARY KEY, balance bigint)"))
        conn.execute(sa.text("INSERT INTO accounts VALUES (1, 0), (2, 0), (3, 0)"))
    engine.dispose()


def _balances(run: DocRun) -> dict[int, int]:
    engine = sa.create_engine(run.postgres_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT id, balance FROM accounts")).all()
    engine.dispose()
    return {r[0]: r[1] for r in rows}


AMOUNTS = list(range(1, RECORDS + 1))


def _given_payments_stream(run: DocRun) -> dict[str, Any]:
    from pyspark.sql import functions as F

    _accounts(run)
    values = [json.dumps({"account": i % 3 + 1, "amount": a}).encode()
              for i, a in enumerate(AMOUNTS)]
    raw = run.stream("payments", values)
    body = F.col("value").cast("string")
    return {"payments": raw.select(
        "topic", "partition", "offset",
        F.get_json_object(body, "$.account").cast("int").alias("account"),
        F.get_json_object(body, "$.amount").cast("bigint").alias("amount"),
    )}


def _paid_once_on_both(run: DocRun, names: dict[str, Any]) -> None:
    run.wait_until(lambda: sum(_balances(run).values()) >= sum(AMOUNTS),
                   "every payment added to the balances")
    run.stop_queries()
    assert _balances(run) == {k: sum(AMOUNTS[k - 1::3]) for k in (1, 2, 3)}
    assert read_delta(str(run.path("/lake/payments"))).num_rows == RECORDS


def _listing_is_the_protocol(run: DocRun, names: dict[str, Any]) -> None:
    # The toolkit's module postpones its annotations: compare them as written.
    assert run.block is not None
    (listing,) = (node for node in ast.walk(ast.parse(run.block.code))
                  if isinstance(node, ast.ClassDef))
    listed = {node.name: _signature_text(node) for node in listing.body
              if isinstance(node, ast.FunctionDef)}
    (protocol,) = ast.parse(inspect.getsource(kafka_share_eos.Participant)).body
    assert isinstance(protocol, ast.ClassDef)
    methods = [node for node in protocol.body if isinstance(node, ast.FunctionDef)]
    assert listed == {node.name: _signature_text(node) for node in methods if node.name != "name"}
    assert isinstance(vars(kafka_share_eos.Participant)["name"], property)
    assert typing.get_type_hints(names["Participant"])["name"] is str


def _signature_text(node: ast.FunctionDef) -> str:
    args = ", ".join(
        f"{a.arg}: {ast.unparse(a.annotation)}" if a.annotation else a.arg for a in node.args.args
    )
    returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
    return f"({args}){returns}"


def _adds_to_balances(run: DocRun, names: dict[str, Any]) -> None:
    _accounts(run)
    engine = sa.create_engine(run.postgres_url)
    with engine.begin() as conn:
        names["add_to_balances"](conn, pa.table({"account": [1, 1, 2], "amount": [5, 7, 11]}))
    engine.dispose()
    assert _balances(run) == {1: 12, 2: 11, 3: 0}


Setup = Callable[[DocRun], dict[str, Any]]
Check = Callable[[DocRun, dict[str, Any]], None]


def _topic(name: str) -> Setup:
    def setup(run: DocRun) -> dict[str, Any]:
        run.topic(name, _orders())
        return {"spark": run.spark}

    return setup


@dataclass(frozen=True)
class Spec:
    check: Check
    setup: Setup = lambda run: {}


SPECS: dict[str, Spec] = {
    "README.md#1": Spec(_upserted_once("orders", "orders"), _topic("orders")),
    "getting-started.md#1": Spec(_upserted_once("events", "events"), _topic("events")),
    "strategies.md#1": Spec(_upserted_once("events", "orders"), _topic("orders")),
    "strategies.md#2": Spec(_report_of_a_batch_with_each_kind_of_row, _given_arrow_table),
    "strategies.md#3": Spec(_versions_decide, lambda run: {
        "engine": sa.create_engine(f"sqlite:///{run.tmp / 'balances.db'}")}),
    "source.md#1": Spec(_has_the_documented_columns, lambda run: {
        "spark": run.spark, "bootstrap": run.broker.bootstrap_servers}),
    "checkpoint-dedup.md#1": Spec(_deduplicated_into_delta,
                                  lambda run: {"df": run.stream("orders", _orders())}),
    "dead-letters.md#1": Spec(_bad_payments_dead_lettered, _given_payments_and_url),
    "embedded-broker.md#1": Spec(_hello_received),
    "iceberg.md#1": Spec(_upserted_into_iceberg,
                         lambda run: {"df": run.stream("orders", _orders())}),
    "errors.md#1": Spec(_is("sink", "IdempotentUpsertSink")),
    "kafka-topic.md#1": Spec(_enriched_once, lambda run: {**_given_enrich(run),
                                                          "spark": run.spark}),
    "kafka-topic.md#2": Spec(_closed_dedup_store_of_a_topic_sink, _given_output_topic),
    "two-phase-commit.md#1": Spec(_paid_once_on_both, _given_payments_stream),
    "two-phase-commit.md#2": Spec(_listing_is_the_protocol),
    "two-phase-commit.md#3": Spec(_adds_to_balances),
}


def _chains() -> list[list[Block]]:
    """Blocks grouped as they run: a ``continues`` block joins the one before it."""
    chains: list[list[Block]] = []
    for block in python_blocks():
        if block.marker == "continues":
            assert chains and chains[-1][-1].path == block.path, (
                f"{block.where}: 'continues' needs a Python block before it on the page")
            chains[-1].append(block)
        else:
            chains.append([block])
    return chains


CHAINS = _chains()
RUNNABLE = [chain for chain in CHAINS if chain[0].marker != "compile-only"]
COMPILE_ONLY = [chain[0] for chain in CHAINS if chain[0].marker == "compile-only"]


def test_the_harness_finds_every_python_block_and_each_runnable_one_has_a_spec() -> None:
    runnable = {block.name for chain in RUNNABLE for block in chain}

    assert len(python_blocks()) >= 16
    assert runnable == set(SPECS), (
        f"blocks without a spec: {sorted(runnable - set(SPECS))}; "
        f"specs without a block: {sorted(set(SPECS) - runnable)}")
    assert all(block.reason for block in COMPILE_ONLY), "a compile-only marker says why"


@pytest.fixture
def doc_run(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[DocRun]:
    with EmbeddedBroker() as broker:
        run = DocRun(request, tmp_path, broker)
        try:
            yield run
        finally:
            run.stop_queries()


@pytest.mark.parametrize("chain", RUNNABLE, ids=[chain[0].name for chain in RUNNABLE])
def test_python_block_runs_and_does_what_its_page_says(chain: list[Block], doc_run: DocRun) -> None:
    names: dict[str, Any] = {"__name__": "__docs__"}
    for block in chain:
        spec = SPECS[block.name]
        doc_run.block = block
        names.update(spec.setup(doc_run))
        missing = free_names(block.code) - names.keys()
        assert not missing, f"{block.where} uses {sorted(missing)} without defining them"
        postgres = doc_run.postgres_url if "postgresql+psycopg://" in block.code else None
        tree = ToTestResources(doc_run.broker.bootstrap_servers, postgres, doc_run.tmp).visit(
            ast.parse(block.code))
        exec(compile(ast.fix_missing_locations(tree), block.where, "exec"), names)
        spec.check(doc_run, names)


@pytest.mark.parametrize("block", COMPILE_ONLY, ids=[block.name for block in COMPILE_ONLY])
def test_compile_only_block_compiles_and_its_imports_resolve(block: Block) -> None:
    compile(block.code, block.where, "exec")
    exec(compile(imports_only(block.code), block.where, "exec"), {})


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            target: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        try:
            for attribute in parts[cut:]:
                target = getattr(target, attribute)
        except AttributeError:
            return False
        return True
    return False


def test_every_toolkit_path_the_docs_name_resolves() -> None:
    named = {
        (path.name, dotted)
        for path in documents()
        for dotted in re.findall(r"`(kafka_share_eos(?:\.\w+)+)", path.read_text())
    }

    assert any("launchers.spark.local_spark_session" in dotted for _, dotted in named)
    assert not [f"{page}: {dotted}" for page, dotted in sorted(named) if not _resolves(dotted)]
