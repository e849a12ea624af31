"""Polled messages into journal rows: Arrow conversion, and its one-time set-up (no broker, no
Spark session)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from helpers.messages import messages

from kafka_share_eos.source.conversion import to_record_batch


def test_record_batch_keeps_malformed_input_unchanged() -> None:
    rows = to_record_batch(messages()).to_pylist()
    assert [(r["key"], r["value"]) for r in rows] == [
        (b"k", b"v"), (None, b""), (b"", None), (b"big", b"x" * 1_000_000),
    ]
    assert [r["offset"] for r in rows] == [0, 1, 2, 3]
    assert {r["topic"] for r in rows} == {"orders"} and {r["partition"] for r in rows} == {3}
    assert [r["timestampType"] for r in rows] == [0, None, 1, 0]
    assert rows[0]["timestamp"].timestamp() == pytest.approx(1_700_000_000.123)
    assert rows[1]["timestamp"] is None
    assert rows[0]["headers"] == [{"key": "h", "value": b"1"}, {"key": "h", "value": None}]
    assert rows[1]["headers"] is None
    assert [r["deliveryCount"] for r in rows] == [1, 3, 1, 1]


_WARM_UP = """
import sys, threading
from kafka_share_eos.source.conversion import prepare_conversion
started = []
start = threading.Thread.start
def counting_start(thread):
    started.append(thread.name)
    start(thread)
threading.Thread.start = counting_start
before = "pandas" in sys.modules
prepare_conversion()
prepare_conversion()
for thread in threading.enumerate():
    if thread.name == "kafka-share-arrow-warm-up":
        thread.join()
print(before, started, "pandas" in sys.modules)
"""


def test_the_conversion_is_prepared_once_on_a_thread_of_its_own() -> None:
    # A fresh interpreter, as a source runner is: Arrow's one-time set-up for converting
    # Python objects (its import of pandas) is done by one thread beside the caller.
    done = subprocess.run([sys.executable, "-c", _WARM_UP], capture_output=True, text=True,
                          check=True)
    assert done.stdout.split("\n")[0] == "False ['kafka-share-arrow-warm-up'] True"
