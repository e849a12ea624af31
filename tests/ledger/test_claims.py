"""Several applications on one checkpoint-dedup ledger (a Delta table, or an Iceberg one) and
one Delta sink: each record once.

Each application is a separate process with its own ``app_id`` (and sink ``app_id``), as
separate Spark applications would be. The hard case is forced, not hoped for: application A
reads the ledger and is held before it claims (``KSE_HOLD_AT``), while application B, holding
the same records after a lock handoff, claims and applies them; A's claim must then lose.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
from helpers import applications
from helpers.applications import HoldGate, finish
from helpers.ledgers import (
    DEDUP_APPLICATION,
    LEDGER_BACKENDS,
    delta_rows,
    ledger_rows,
    ledger_spec,
    opened_ledger,
    records,
)

from kafka_share_eos.faults import CRASH_AT_ENV
from kafka_share_eos.ledger.claims import BEFORE_CLAIM
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CRASH_BEFORE_SINK, CheckpointDedupStore

pytestmark = pytest.mark.timeout(180)



def start_application(
    paths: tuple[str, str], app: str, batches: list[tuple[int, list[tuple[str, int, int]]]],
    **env: str,
) -> subprocess.Popen[str]:
    ledger, sink = paths
    return applications.start(DEDUP_APPLICATION, ledger, sink, app, json.dumps(batches), **env)


def run(coordinates: range, partition: int = 0) -> list[tuple[str, int, int]]:
    return [("t", partition, offset) for offset in coordinates]


def claimed_by(ledger: str) -> dict[int, str]:
    claims = ledger_rows(ledger, ["offset", "_app_id"])
    assert len(claims) == len(dict(claims)), "an identity claimed twice"
    return dict(claims)


@pytest.fixture(params=LEDGER_BACKENDS)
def paths(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, str]:
    return ledger_spec(request, tmp_path, request.param), str(tmp_path / "sink")


def test_a_batch_held_past_a_lock_handoff_loses_its_claim(
    paths: tuple[str, str], tmp_path: Path
) -> None:
    ledger, sink = paths
    gate = HoldGate(tmp_path / "gate", BEFORE_CLAIM)
    # A holds offsets 0-5, reads the ledger (empty) and stops before claiming them...
    held = start_application(paths, "app-a", [(0, run(range(6)))], **gate.env)
    gate.wait_held(held)
    # ...while B, to which offsets 3-5 were redelivered with 6-7, claims and applies them.
    other = CheckpointDedupStore(opened_ledger(ledger),
                                 DeltaAppendSink(sink, app_id="app-b-sink"), app_id="app-b")
    b = other.apply(records(*run(range(3, 8))), 0)
    gate.release()

    [a] = finish(held)
    assert (b.rows_written, b.already_applied) == (5, 0)
    assert a == [3, 3]  # A applied 0-2 and found 3-5 taken
    assert delta_rows(sink) == run(range(8))
    assert claimed_by(ledger) == {**dict.fromkeys(range(3), "app-a"),
                                  **dict.fromkeys(range(3, 8), "app-b")}


@pytest.mark.parametrize("paths", ["delta", pytest.param("iceberg", marks=pytest.mark.full)],
                         indirect=True)
def test_concurrent_applications_with_overlapping_batches_apply_each_record_once(
    paths: tuple[str, str],
) -> None:
    # Three applications whose batches overlap as lock expiries make them: every offset is
    # delivered to two or three of them, in different batches.
    plans = {
        "app-a": [(b, run(range(b * 10, b * 10 + 15))) for b in range(6)],
        "app-b": [(b, run(range(b * 10 + 5, b * 10 + 20))) for b in range(6)],
        "app-c": [(b, run(range(b * 10, b * 10 + 20, 2)) + run(range(b, 60, 7), 1))
                  for b in range(6)],
    }
    applications = [start_application(paths, app, plan) for app, plan in plans.items()]
    reports = [finish(process) for process in applications]

    every = sorted({tuple(c) for plan in plans.values() for _, batch in plan for c in batch})
    ledger, sink = paths
    assert delta_rows(sink) == every
    assert ledger_rows(ledger) == every
    assert sum(written for report in reports for written, _ in report) == len(every)
    assert all(any(written for written, _ in report) for report in reports)


def test_a_claim_left_by_a_killed_application_is_applied_by_its_restart(
    paths: tuple[str, str],
) -> None:
    ledger, sink = paths
    crashed = start_application(
        paths, "app-a", [(0, run(range(4)))], **{CRASH_AT_ENV: CRASH_BEFORE_SINK}
    )
    crashed.communicate(timeout=120)
    assert crashed.returncode == -signal.SIGKILL
    # B gets the records A held (its lock expired) and finds them claimed: not its to apply.
    other = CheckpointDedupStore(opened_ledger(ledger),
                                 DeltaAppendSink(sink, app_id="app-b-sink"), app_id="app-b")
    assert other.apply(records(*run(range(2, 6))), 0).rows_written == 2
    assert delta_rows(sink) == run(range(4, 6))
    # A restarts from its checkpoint and replays batch 0 from its journal: its claims land.
    [a] = finish(start_application(paths, "app-a", [(0, run(range(4)))]))
    assert a == [4, 0]
    assert delta_rows(sink) == run(range(6))
