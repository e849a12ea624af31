"""The identity ledger in an Iceberg table on pyiceberg's SQL catalog (SQLite and PostgreSQL):
claims that exactly one writer wins under races between threads, a claim whose answer was lost
claimed again as the batch's own, lookups, the batch order, and the tables it refuses."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import threading
import uuid
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.extras import NO_DELTA, without
from helpers.iceberg import BACKENDS, LosesAnswers, catalog_config, load, open_catalog, sql_catalog
from helpers.ledgers import partition_run, records

from kafka_share_eos.errors import (
    AppIdConflictError,
    BatchIdReusedError,
    ConfigurationError,
    SinkConfigurationError,
    UnsupportedFormatError,
)
from kafka_share_eos.formats import TABLE_PROPERTY
from kafka_share_eos.iceberg.snapshots import WATERMARK_PREFIX
from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger

pytestmark = pytest.mark.timeout(120)


def claimed(config: dict[str, str], table: str = "db.ledger") -> list[tuple[int, int, str]]:
    """(partition, offset, app) of every claim, sorted, duplicates kept."""
    rows = load(config, table).scan().to_arrow()
    return sorted(zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(),
                      rows["_app_id"].to_pylist(), strict=True))


@pytest.fixture(params=BACKENDS)
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, request.param)


def test_claims_replays_and_the_batch_order(config: dict[str, str]) -> None:
    ledger = IcebergLedger("db.ledger", catalog=config, app_id="a")
    assert ledger.stored_identity() is None and ledger.last_batch() is None
    first = ledger.claim(pa.concat_tables([partition_run("t", p, 0, 10) for p in (0, 1)]), 0)
    again = ledger.claim(partition_run("t", 0, 5, 15), 1)
    replay = ledger.claim(partition_run("t", 0, 5, 15), 1)

    assert (first.claimed_now, first.held_elsewhere, first.attempts) == (20, 0, 1)
    assert (again.claimed_now, again.held_elsewhere) == (5, 5)
    assert again.rows["offset"].to_pylist() == list(range(10, 15))
    # A replay owns what its first attempt claimed, and claims nothing more.
    assert (replay.claimed_now, replay.rows["offset"].to_pylist()) == (0, list(range(10, 15)))
    assert ledger.last_batch() == 1
    with pytest.raises(BatchIdReusedError, match="1 record"):
        ledger.claim(partition_run("t", 0, 14, 16), 1)
    with pytest.raises(AppIdConflictError, match="already holds batch 1 of app_id 'a'"):
        ledger.claim(partition_run("t", 0, 50, 55), 0)
    assert len(claimed(config)) == 25
    assert ledger.new_rows(records(("t", 0, 3), ("t", 1, 10), ("u", 0, 0)))[
        "offset"].to_pylist() == [10, 0]
    # Each share-partition's claims are files of their own, which a lookup skips by bounds.
    assert [f.name for f in load(config, "db.ledger").spec().fields] == ["topic", "partition"]
    assert ledger.stored_identity() == ("topic", "partition", "offset")


def race(config: dict[str, str], table: str) -> None:
    """Four applications, each a thread with a catalog of its own, claim overlapping offsets
    three times, all at once each time: every offset is claimed and owned exactly once."""
    apps = [f"app-{n}" for n in range(4)]
    start = threading.Barrier(len(apps))
    owned: dict[str, list[int]] = {}
    failures: list[BaseException] = []

    def application(app: str, shift: int) -> None:
        ledger = IcebergLedger(table, catalog=config, app_id=app)
        try:
            for batch_id in range(3):
                low = batch_id * 20 + shift
                start.wait(timeout=30)
                rows = ledger.claim(partition_run("t", 0, low, low + 25), batch_id).rows
                owned.setdefault(app, []).extend(rows["offset"].to_pylist())
        except BaseException as error:
            failures.append(error)
            start.abort()

    threads = [threading.Thread(target=application, args=(app, 3 * n))
               for n, app in enumerate(apps)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=100)

    assert failures == []
    every = Counter(offset for offsets in owned.values() for offset in offsets)
    assert sorted(every) == list(range(0, 2 * 20 + 9 + 25))
    assert set(every.values()) == {1}  # no record owned by two applications
    claims = claimed(config, table)
    assert [(p, o) for p, o, _ in claims] == [(0, o) for o in sorted(every)]
    assert all(owner == app for app, offsets in owned.items()
               for _, offset, owner in claims if offset in offsets)


def test_of_threads_claiming_overlapping_records_exactly_one_wins_each(
    config: dict[str, str],
) -> None:
    open_catalog(config)  # pyiceberg creates its catalog's own tables, which no race may do
    race(config, "db.ledger")


def test_on_the_rest_catalog_exactly_one_claim_of_a_record_wins(
    iceberg_rest_catalog: dict[str, str],
) -> None:
    race(iceberg_rest_catalog, f"l{uuid.uuid4().hex[:8]}.ledger")


def test_a_claim_whose_answer_was_lost_is_the_batchs_own_when_it_runs_again(
    config: dict[str, str],
) -> None:
    ledger = IcebergLedger("db.ledger", catalog=sql_catalog(config, LosesAnswers), app_id="a")
    ledger.claim(partition_run("t", 0, 0, 5), 0)
    LosesAnswers.lose_next = True
    with pytest.raises(ConnectionError, match="answer was lost"):
        ledger.claim(partition_run("t", 0, 3, 9), 1)

    replay = ledger.claim(partition_run("t", 0, 3, 9), 1)
    assert (replay.claimed_now, replay.held_elsewhere) == (0, 2)
    assert replay.rows["offset"].to_pylist() == [5, 6, 7, 8]
    assert [o for _, o, _ in claimed(config)] == list(range(9))


def test_business_keys_and_identity_types_from_pandas(config: dict[str, str]) -> None:
    keyed = IcebergLedger("db.orders_ledger", catalog=config, identity=["order_id"])
    keyed.claim(pa.table({"order_id": ["o1", "o2"]}), 0)
    assert keyed.claim(pa.table({"order_id": ["o2", "o3"]}), 1).rows[
        "order_id"].to_pylist() == ["o3"]
    assert load(config, "db.orders_ledger").spec().fields == ()
    assert keyed.stored_identity() == ("order_id",)

    spark = IcebergLedger("db.ledger", catalog=config)
    spark.claim(records(("t", 0, 1)), 0)  # Spark's int partition
    wide = pa.table({"topic": ["t", "t"], "partition": [0, 0], "offset": [1, 2]})  # pandas' int64
    assert spark.claim(wide, 1).rows["offset"].to_pylist() == [2]


def test_a_copy_in_another_process_claims_through_a_catalog_of_its_own(
    config: dict[str, str],
) -> None:
    ledger = IcebergLedger("db.ledger", catalog=open_catalog(config), app_id="a")
    ledger.claim(partition_run("t", 0, 0, 3), 0)
    copy = pickle.loads(pickle.dumps(ledger))

    assert copy.claim(partition_run("t", 0, 2, 6), 1).rows["offset"].to_pylist() == [3, 4, 5]
    summary = load(config, "db.ledger").current_snapshot().summary  # type: ignore[union-attr]
    assert summary.additional_properties[f"{WATERMARK_PREFIX}a"] == "1"
    assert ledger.configured(["order_id"], "b").identity == ("order_id",)
    assert ledger.identity == ("topic", "partition", "offset")


def test_tables_that_are_no_ledger_of_this_release_are_refused(config: dict[str, str]) -> None:
    catalog = open_catalog(config)
    catalog.create_namespace("db")
    catalog.create_table("db.orders", schema=pa.schema([("order_id", pa.string())]))
    with pytest.raises(ConfigurationError, match="is not an identity ledger: it lacks"):
        IcebergLedger("db.orders", catalog=config).check_target()

    IcebergLedger("db.ledger", catalog=config).claim(partition_run("t", 0, 0, 2), 0)
    catalog.load_table("db.ledger").transaction().set_properties(
        {TABLE_PROPERTY: "99"}).commit_transaction()
    with pytest.raises(UnsupportedFormatError, match="99"):
        IcebergLedger("db.ledger", catalog=config).claim(partition_run("t", 0, 2, 4), 1)
    with pytest.raises(SinkConfigurationError, match="max_claim_attempts"):
        IcebergLedger("db.ledger", catalog=config, max_claim_attempts=0)
    with pytest.raises(ConfigurationError, match="reserved"):
        IcebergLedger("db.ledger", catalog=config, identity=["_app_id"])


def test_a_store_on_an_iceberg_ledger_and_sink_needs_no_delta_extra(
    request: pytest.FixtureRequest, tmp_path: Path,
) -> None:
    script = """
import json, sys
import pyarrow as pa
from kafka_share_eos import CheckpointDedupStore, IcebergAppendSink, IcebergLedger
catalog = json.loads(sys.argv[1])
store = CheckpointDedupStore(IcebergLedger("db.ledger", catalog=catalog),
                             IcebergAppendSink("db.events", catalog=catalog, create_table=True))
def batch(offsets):
    return pa.table({"topic": ["t"] * len(offsets), "partition": [0] * len(offsets),
                     "offset": offsets})
written = [store.apply(batch(list(range(0, 4))), 0).rows_written,
           store.apply(batch(list(range(2, 6))), 1).rows_written]
print(json.dumps({"written": written, "delta": "deltalake" in sys.modules}))
"""
    config = catalog_config(request, tmp_path, "sqlite")
    result = subprocess.run([sys.executable, "-c", script, json.dumps(config)],
                            capture_output=True, text=True, timeout=100,
                            env=without(NO_DELTA, tmp_path / "site"))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(result.stdout) == {"written": [4, 2], "delta": False}
    assert sorted(load(config, "db.events").scan().to_arrow()["offset"].to_pylist()) == list(
        range(6))
