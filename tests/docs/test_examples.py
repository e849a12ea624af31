"""Each example runs end to end as a script and leaves exactly-once results in its sinks; the
Postgres and Delta examples run with only the extras they need (``[spark,postgres]``,
``[spark,delta]``): the other extras' libraries fail to import, as when not installed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import sqlalchemy as sa
from helpers import produce
from helpers.delta import read_delta
from helpers.extras import NO_DELTA, NO_DELTA_NOR_PSYCOPG, NO_SQL, without
from helpers.quiet import quiet_run_log
from helpers.scripts import run_python
from pyiceberg.catalog import load_catalog

from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _query(url: str, sql: str) -> list[tuple[object, ...]]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = [tuple(row) for row in conn.execute(sa.text(sql))]
    engine.dispose()
    return rows


def test_delta_dedup_pipeline_appends_every_event_once(tmp_path: Path) -> None:
    result = run_python(
        str(EXAMPLES / "delta_dedup_pipeline.py"), "--events", "300", "--workdir", str(tmp_path),
        env=without(NO_SQL, tmp_path / "site"),
    )
    events = read_delta(str(tmp_path / "events"), "SELECT reading FROM t")
    readings = sorted(events.column("reading").to_pylist())
    assert readings == sorted(f"reading {i}" for i in range(300))
    assert "300 appended" in result.stdout
    quiet_run_log(result.stdout + result.stderr)


@pytest.mark.postgres
def test_postgres_upserts_keep_the_latest_status_from_a_given_cluster(
    share_topic: ShareTopic, postgres_url: str, tmp_path: Path
) -> None:
    # The session's broker stands in for a real cluster: the example gets its address and
    # consumes what is already on the topic, spread over partitions so updates arrive unordered.
    updates = [
        json.dumps({"order_id": order, "status": status, "version": version}).encode()
        for version, status in enumerate(["placed", "paid", "shipped"], start=1)
        for order in range(150)
    ]
    produce(share_topic.bootstrap_servers, share_topic.topic, updates, partitions=4)

    result = run_python(
        str(EXAMPLES / "postgres_upserts.py"),
        "--bootstrap-servers", share_topic.bootstrap_servers,
        "--topic", share_topic.topic,
        "--group", share_topic.group_id,
        "--postgres-url", postgres_url,
        "--workdir", str(tmp_path),
        env=without(NO_DELTA, tmp_path / "site"),
    )

    rows = _query(postgres_url, "SELECT order_id, status, version FROM orders ORDER BY order_id")
    assert rows == [(order, "shipped", 3) for order in range(150)]
    assert "orders by status: shipped 150" in result.stdout
    quiet_run_log(result.stdout + result.stderr)


@pytest.mark.postgres
def test_account_balances_add_each_payment_once_despite_a_failure(
    postgres_url: str, tmp_path: Path
) -> None:
    result = run_python(
        str(EXAMPLES / "account_balances.py"),
        "--payments", "400", "--accounts", "7", "--per-trigger", "100",
        "--postgres-url", postgres_url,
        "--workdir", str(tmp_path),
    )

    expected = dict.fromkeys(range(7), 0)
    for payment in range(400):
        expected[payment % 7] += 1 + payment * 37 % 500
    balances = _query(postgres_url, "SELECT id, balance FROM accounts ORDER BY id")
    assert balances == sorted(expected.items())
    audit = read_delta(str(tmp_path / "payments"), "SELECT payment_id FROM t")
    assert sorted(audit.column("payment_id").to_pylist()) == list(range(400))
    quiet_run_log(result.stdout + result.stderr, crashes=1)
    assert "simulated crash in batch 1 after the sink: restarting" in result.stdout
    absorbed = int(result.stdout.split(" redelivered or replayed payments absorbed")[0].split()[-1])
    assert absorbed >= 100  # at least the replayed batch, all of it already applied
    assert "every payment was added exactly once" in result.stdout


def test_dead_letters_example_applies_the_good_payments_and_keeps_the_bad(
    tmp_path: Path,
) -> None:
    result = run_python(
        str(EXAMPLES / "dead_letters.py"), "--payments", "700", "--workdir", str(tmp_path)
    )
    undecodable = {i for i in range(700) if i % 50 == 49}
    negative = {i for i in range(700) if i % 70 == 69} - undecodable
    applied = _query(f"sqlite:///{tmp_path / 'payments.db'}",
                     "SELECT payment_id, amount FROM payments ORDER BY payment_id")
    good = [i for i in range(700) if i not in undecodable | negative]
    assert applied == [(i, i % 500) for i in good]
    letters = read_delta(str(tmp_path / "dead-letters"), "SELECT stage, value FROM t")
    by_stage = sorted(letters["stage"].to_pylist())
    assert by_stage == ["transform"] * len(undecodable) + ["write"] * len(negative)
    assert f"{len(good)} applied, {len(undecodable) + len(negative)} dead-lettered" in (
        result.stdout
    )
    quiet_run_log(result.stdout + result.stderr)


def test_kafka_to_kafka_example_writes_each_order_once(tmp_path: Path) -> None:
    result = run_python(
        str(EXAMPLES / "kafka_to_kafka.py"), "--orders", "300", "--workdir", str(tmp_path)
    )
    # The embedded broker drops every share session when a client connects (the sink's
    # producer does on its first batch), so records come again; none is written twice.
    assert "300 written to orders-enriched" in result.stdout
    assert "orders-enriched holds 300 orders (300 distinct)" in result.stdout
    quiet_run_log(result.stdout + result.stderr)


def test_iceberg_upserts_keep_the_latest_reading_of_every_sensor(tmp_path: Path) -> None:
    result = run_python(
        str(EXAMPLES / "iceberg_upserts.py"), "--sensors", "60", "--readings", "3",
        "--workdir", str(tmp_path), env=without(NO_DELTA_NOR_PSYCOPG, tmp_path / "site"),
    )

    catalog = load_catalog("default", type="sql", uri=f"sqlite:///{tmp_path / 'catalog.db'}")
    rows = catalog.load_table("plant.sensors").scan().to_arrow().sort_by("sensor")
    assert rows.to_pylist() == [
        {"sensor": sensor, "sequence": 3, "celsius": (sensor * 7 + 9) % 40 + 0.5}
        for sensor in range(60)
    ]
    assert "plant.sensors holds 60 sensors, latest sequence numbers [3]" in result.stdout
    assert "last snapshot: batch " in result.stdout
    quiet_run_log(result.stdout + result.stderr)
