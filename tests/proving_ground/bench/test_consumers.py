"""The consumers benchmark: every contender reads every record, and its rows are well formed;
the driver's CPU leaves executors out.

Timings are not asserted: only that every record was read, the counts, and the rows' shape.
"""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap

import pytest

from kafka_share_eos.proving_ground.bench.consumers import CONSUMER_COUNTS, run
from kafka_share_eos.proving_ground.bench.cpu import (
    EXECUTOR_MAIN_CLASS,
    tree_seconds_without_executors,
)
from kafka_share_eos.proving_ground.bench.peer_ratios import consumers_ratios

# A parent that starts two CPU burners: a plain child and one named like an executor JVM.
BURNERS = textwrap.dedent("""
    import subprocess, sys, time
    burn = ("import sys, time\\n"
            "while time.process_time() < float(sys.argv[1]): pass\\n"
            "print('burnt', flush=True); sys.stdin.read()")
    children = [subprocess.Popen([sys.executable, "-c", burn, seconds, *name],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
                for seconds, name in (("0.3", []), ("1.5", [sys.argv[1]]))]
    for child in children:
        child.stdout.readline()
    print("ready", flush=True)
    sys.stdin.read()
""")


def test_driver_cpu_counts_the_process_tree_without_executors() -> None:
    parent = subprocess.Popen([sys.executable, "-c", BURNERS, EXECUTOR_MAIN_CLASS],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None and parent.stdout.readline() == "ready\n"
        counted = tree_seconds_without_executors(parent.pid)
    finally:
        parent.communicate("")
    # The plain child's 0.3 s and the interpreters' start-up; not the executor's 1.5 s.
    assert 0.3 <= counted < 1.2, counted
    with pytest.raises(ProcessLookupError):
        tree_seconds_without_executors(parent.pid)


@pytest.mark.spark
@pytest.mark.full
@pytest.mark.timeout(600)
def test_every_contender_reads_every_record_and_rows_are_well_formed() -> None:
    result = run(records=4_000, per_trigger=1_000, rounds=1)

    for n in CONSUMER_COUNTS:
        entry = result[str(n)]
        (measured,) = result["rounds"][str(n)]
        assert measured["rows_read"] >= 4_000
        assert entry["records"] == 4_000
        assert entry["driver_cpu_seconds"] > 0
        slots = [slot["slot"] for slot in entry["slots"]]
        assert slots == list(range(n)), entry["slots"]
        # Each slot's records are what its batches journaled: together, what Spark read.
        assert sum(slot["records"] for slot in entry["slots"]) == measured["rows_read"]
    assert result["1"]["rate_vs_one"] == result["1"]["driver_cpu_per_batch_vs_one"] == 1.0
    for n in CONSUMER_COUNTS[1:]:
        (raw,) = result["raw_rounds"][str(n)]
        assert sum(raw["per_process"]) >= 4_000 and len(raw["per_process"]) == n

    rows = consumers_ratios(result)
    assert [row.name for row in rows] == [
        name
        for n in CONSUMER_COUNTS[1:]
        for name in (f"consumers={n} vs 1, records per second",
                     f"consumers={n} vs {n} raw ShareConsumer processes, records per second",
                     f"consumers={n} vs 1, driver CPU per micro-batch",
                     f"consumers={n}, slots that took records")
    ]
    for row in rows:
        assert math.isfinite(row.value) and row.value > 0, row
    targets = {row.name: str(row.target) for row in rows if row.target is not None}
    assert targets["consumers=4 vs 1, driver CPU per micro-batch"] == "≤ 1.1"
    assert targets["consumers=4 vs 4 raw ShareConsumer processes, records per second"] == "≥ 0.8"
    assert targets["consumers=4 vs 1, records per second"] == "≥ 1"
    assert targets["consumers=4, slots that took records"] == "≥ 4"
