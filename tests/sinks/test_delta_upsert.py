"""Delta specifics of the upsert sink: application transactions and concurrent writers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from typing import Any

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError
from helpers.delta import read_delta

from kafka_share_eos.errors import AppIdConflictError
from kafka_share_eos.faults import CRASH_AT_ENV, SINK_MID_WRITE
from kafka_share_eos.sinks.delta_upsert import DEFAULT_APP_ID_PREFIX, DeltaMergeWriter
from kafka_share_eos.strategies import CommitConflictError, IdempotentUpsertSink

pytestmark = pytest.mark.timeout(120)


def balances(keys: range, version: int) -> pa.Table:
    return pa.table(
        {
            "account": pa.array(list(keys), pa.int64()),
            "version": pa.array([version] * len(keys), pa.int64()),
            "balance": pa.array([float(k * version) for k in keys]),
        }
    )


def read(path: str) -> dict[int, tuple[int, float]]:
    table = read_delta(path)
    return {r["account"]: (r["version"], r["balance"]) for r in table.to_pylist()}


def test_batch_ids_are_recorded_and_a_rerun_batch_is_a_no_op(delta_path: str) -> None:
    sink = IdempotentUpsertSink.delta(delta_path, key_columns=["account"], version_column="version")
    sink.apply(balances(range(4), 1), 0)
    sink.apply(balances(range(2, 6), 2), 1)
    table = DeltaTable(delta_path)
    assert table.transaction_version(f"{DEFAULT_APP_ID_PREFIX}:{delta_path}") == 1
    commits = table.version()

    # A re-run of batch 1 (the commit landed, Spark's commit log did not) writes nothing.
    rerun = sink.apply(balances(range(2, 6), 2), 1)
    assert (rerun.write_path, rerun.already_applied, rerun.rows_written) == ("skipped-batch", 4, 0)
    assert DeltaTable(delta_path).version() == commits
    assert read(delta_path) == {0: (1, 0.0), 1: (1, 1.0)} | {k: (2, 2.0 * k) for k in range(2, 6)}


def test_each_app_id_keeps_its_own_batch_ids(delta_path: str) -> None:
    first = IdempotentUpsertSink.delta(delta_path, key_columns=["account"], app_id="query-a")
    second = IdempotentUpsertSink.delta(delta_path, key_columns=["account"], app_id="query-b")
    assert first.apply(balances(range(3), 1), 7).rows_written == 3
    # Batch 0 of another query is not skipped; its row already present is left out.
    report = second.apply(balances(range(2, 5), 1), 0)
    assert (report.write_path, report.already_applied, report.rows_written) == ("append", 1, 2)
    table = DeltaTable(delta_path)
    assert (table.transaction_version("query-a"), table.transaction_version("query-b")) == (7, 0)
    assert sorted(read(delta_path)) == [0, 1, 2, 3, 4]


def test_concurrent_writers_both_land(delta_path: str) -> None:
    IdempotentUpsertSink.delta(delta_path, key_columns=["account"]).apply(balances(range(40), 1), 0)
    errors: list[BaseException] = []

    def writer(keys: range, app_id: str) -> None:
        sink = IdempotentUpsertSink.delta(
            delta_path,
            key_columns=["account"],
            version_column="version",
            app_id=app_id,
            max_commit_attempts=20,
        )
        try:
            for batch_id in range(4):
                sink.apply(balances(keys, batch_id + 2), batch_id)
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=writer, args=(range(0, 20), "a")),
        threading.Thread(target=writer, args=(range(20, 40), "b")),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert read(delta_path) == {k: (5, 5.0 * k) for k in range(40)}


def test_lost_commit_races_are_retried_then_reported(
    delta_path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    attempts: list[int] = []

    def always_conflicting(self: DeltaMergeWriter, table: Any, batch_id: int) -> Any:
        attempts.append(batch_id)
        raise CommitFailedError("concurrent append")

    monkeypatch.setattr(DeltaMergeWriter, "_apply", always_conflicting)
    writer = DeltaMergeWriter(
        delta_path,
        key_columns=["account"],
        app_id="q",
        max_commit_attempts=3,
        retry_backoff_seconds=0.001,
    )
    with pytest.raises(CommitConflictError, match=r"batch 4 .* \(app id 'q'\).* 3 commit attempts"):
        writer.upsert(balances(range(2), 1), 4)
    assert attempts == [4, 4, 4]


CHILD = """
import json, sys
import pyarrow as pa
from kafka_share_eos.strategies import IdempotentUpsertSink
accounts, versions = json.loads(sys.argv[2])
sink = IdempotentUpsertSink.delta(sys.argv[1], key_columns=["account"], version_column="version",
                                  app_id="q")
sink.apply(pa.table({"account": pa.array(accounts, pa.int64()),
                     "version": pa.array(versions, pa.int64()),
                     "balance": pa.array([float(a * v) for a, v in zip(accounts, versions)])}), 1)
"""


def test_crash_between_the_append_and_the_merge_of_a_batch_then_replay(delta_path: str) -> None:
    sink = IdempotentUpsertSink.delta(
        delta_path, key_columns=["account"], version_column="version", app_id="q"
    )
    sink.apply(balances(range(4), 1), 0)
    # Accounts 0-1 stay at version 1, 2-3 move to version 2, 4-5 are new: the new ones are
    # appended (first hit of the mid-write point), then 2-3 merged (second hit: the crash).
    batch = {"account": [0, 1, 2, 3, 4, 5], "version": [1, 1, 2, 2, 2, 2]}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, delta_path,
         json.dumps([batch["account"], batch["version"]])],
        env={**os.environ, CRASH_AT_ENV: f"{SINK_MID_WRITE}@2"},
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    # The append landed without the application transaction; the merge did not.
    assert read(delta_path) == {k: (1, float(k)) for k in range(4)} | {4: (2, 8.0), 5: (2, 10.0)}
    assert DeltaTable(delta_path).transaction_version("q") == 0

    replay = IdempotentUpsertSink.delta(
        delta_path, key_columns=["account"], version_column="version", app_id="q"
    ).apply(pa.table({
        "account": pa.array(batch["account"], pa.int64()),
        "version": pa.array(batch["version"], pa.int64()),
        "balance": pa.array([float(a * v) for a, v in zip(*batch.values(), strict=True)]),
    }), 1)
    assert (replay.write_path, replay.already_applied, replay.rows_written) == ("merge", 4, 2)
    assert read(delta_path) == {0: (1, 0.0), 1: (1, 1.0)} | {k: (2, 2.0 * k) for k in range(2, 6)}
    assert DeltaTable(delta_path).transaction_version("q") == 1


def test_an_older_batch_under_the_same_app_id_is_refused_not_skipped(delta_path: str) -> None:
    IdempotentUpsertSink.delta(delta_path, key_columns=["account"], app_id="shared").apply(
        balances(range(2), 1), 7
    )
    # A second application (or a new checkpoint) on the same app id, at batch 3: skipping its
    # batch as "already applied" would lose its rows.
    with pytest.raises(AppIdConflictError, match="batch 7 of app_id 'shared'"):
        IdempotentUpsertSink.delta(delta_path, key_columns=["account"], app_id="shared").apply(
            balances(range(2, 4), 1), 3
        )
    assert sorted(read(delta_path)) == [0, 1]
