"""Histograms handed to Prometheus: cumulative buckets ending with +Inf, sum and count."""

from __future__ import annotations

from kafka_share_eos.monitoring.histogram import Histogram


def test_buckets_are_cumulative_and_end_with_inf() -> None:
    histogram = Histogram(bounds=(0.1, 1.0))
    for value in (0.05, 0.1, 0.5, 3.0):
        histogram.observe(value)
    # A value on a bound is counted in that bound's bucket (Prometheus's "le").
    assert histogram.cumulative() == [("0.1", 2.0), ("1.0", 3.0), ("+Inf", 4.0)]
    assert histogram.observations == 4
    assert histogram.total == 3.65
