"""A reading in the background: a scrape starts one only when the last is older than its
interval and none is under way, and a failed reading leaves the last value served."""

from __future__ import annotations

import threading

from kafka_share_eos.monitoring.background import BackgroundReading


class Readings(BackgroundReading[int]):
    def __init__(self, every_s: float) -> None:
        super().__init__("test-readings", every_s, -1)
        self.calls = 0
        self.fail = False
        self.release = threading.Event()
        self.release.set()

    def read(self) -> int | None:
        self.calls += 1
        self.release.wait(30)
        return None if self.fail else self.calls


def test_a_reading_starts_once_per_interval_and_one_at_a_time() -> None:
    readings = Readings(every_s=3600)
    assert readings.value == -1
    readings.refresh()
    readings.wait()
    readings.refresh()  # within the interval: no new reading
    readings.wait()
    assert (readings.calls, readings.value) == (1, 1)

    often = Readings(every_s=0)
    often.release.clear()
    often.refresh()
    often.refresh()  # one is under way: none more
    often.release.set()
    often.wait()
    assert often.calls == 1


def test_a_failed_reading_keeps_the_last_value() -> None:
    readings = Readings(every_s=0)
    readings.refresh()
    readings.wait()
    readings.fail = True
    readings.refresh()
    readings.wait()
    assert (readings.calls, readings.value) == (2, 1)
