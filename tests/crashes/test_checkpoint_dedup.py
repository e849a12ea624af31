"""Each crash point of CheckpointDedupStore, forced for real, ends with every record applied once.

A child process runs the store with ``KSE_CRASH_AT`` naming one point and is SIGKILLed there; a
fresh store in this process then re-runs the same batch id with the same records (what Spark
does after a restart, reading the source journal), followed by a later batch that redelivers
some of them.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from helpers.ledgers import delta_rows, records
from helpers.paths import SHARED

from kafka_share_eos.faults import CRASH_AT_ENV
from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import (
    CRASH_AFTER_SINK,
    CRASH_BEFORE_SINK,
    CheckpointDedupStore,
)

pytestmark = pytest.mark.timeout(180)

CHILD = """
import json, sys
sys.path.insert(0, sys.argv[4])
from helpers.ledgers import records
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore
store = CheckpointDedupStore(sys.argv[1], DeltaAppendSink(sys.argv[2]))
store.apply(records(*[tuple(c) for c in json.loads(sys.argv[3])]), 1)
"""

EARLIER = [("t", 0, 0), ("t", 1, 0)]
BATCH = [("t", 0, 0), ("t", 0, 1), ("t", 0, 2), ("t", 1, 0), ("t", 1, 1)]
LATER = [("t", 0, 2), ("t", 1, 1), ("t", 1, 2)]
EVERY = sorted({*EARLIER, *BATCH, *LATER})


def run_child_until_crash(ledger: str, sink: str, point: str) -> None:
    env = {**os.environ, CRASH_AT_ENV: point}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, ledger, sink, json.dumps(BATCH),
         str(SHARED)],
        env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr


@pytest.mark.parametrize("point", [CRASH_BEFORE_SINK, CRASH_AFTER_SINK])
def test_crash_point_then_replay(tmp_path: Path, point: str) -> None:
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    CheckpointDedupStore(ledger, DeltaAppendSink(sink)).apply(records(*EARLIER), 0)

    run_child_until_crash(ledger, sink, point)
    # the batch's new identities are claimed before the sink is called
    sink_after_crash = EARLIER if point == CRASH_BEFORE_SINK else sorted({*EARLIER, *BATCH})
    assert delta_rows(sink) == sink_after_crash
    assert delta_rows(ledger) == sorted({*EARLIER, *BATCH})
    assert IdentityLedger(ledger).last_batch() == 1

    fresh = CheckpointDedupStore(ledger, DeltaAppendSink(sink))
    replay = fresh.apply(records(*BATCH), 1)
    later = fresh.apply(records(*LATER), 2)

    assert delta_rows(sink) == EVERY
    assert delta_rows(ledger) == EVERY
    assert replay.rows_written == (3 if point == CRASH_BEFORE_SINK else 0)
    assert (later.already_applied, later.rows_written) == (2, 1)


class FailsAfterWriting:
    """A sink whose write commits and then raises (e.g. a timeout reading the commit's reply)."""

    def __init__(self, inner: DeltaAppendSink) -> None:
        self.inner = inner
        self.failures = 1

    def __call__(self, table: pa.Table, batch_id: int) -> None:
        self.inner(table, batch_id)
        if self.failures:
            self.failures -= 1
            raise TimeoutError("commit reply lost")


def test_sink_error_after_its_write_then_replay(tmp_path: Path) -> None:
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    CheckpointDedupStore(ledger, DeltaAppendSink(sink)).apply(records(*EARLIER), 0)
    failing = CheckpointDedupStore(ledger, FailsAfterWriting(DeltaAppendSink(sink)))
    with pytest.raises(TimeoutError):
        failing.apply(records(*BATCH), 1)
    assert IdentityLedger(ledger).last_batch() == 1

    fresh = CheckpointDedupStore(ledger, DeltaAppendSink(sink))
    fresh.apply(records(*BATCH), 1)
    fresh.apply(records(*LATER), 2)
    assert delta_rows(sink) == EVERY
