"""Isolating the rows an error comes from: bisection finds exactly the failing rows and keeps
the rest in order; an error no single row causes is raised."""

from __future__ import annotations

import pyarrow as pa
import pytest

from kafka_share_eos.deadletter.quarantine import isolate

pytestmark = pytest.mark.timeout(120)


def test_bisection_finds_exactly_the_failing_rows_and_keeps_the_rest_in_order() -> None:
    table = pa.table({"n": list(range(37))})
    bad = {0, 5, 6, 36}
    calls = []

    def attempt(part: pa.Table) -> list[int]:
        calls.append(part.num_rows)
        values = part["n"].to_pylist()
        if bad & set(values):
            raise ValueError(f"bad among {values}")
        return values

    found = isolate(table, attempt, lambda e: isinstance(e, ValueError), "test")
    assert sorted(r.index for r in found.rejections) == sorted(bad)
    assert [v for _, _, part in found.results for v in part] == [  # type: ignore[attr-defined]
        n for n in range(37) if n not in bad
    ]
    assert found.kept_indices() == [n for n in range(37) if n not in bad]
    # k bad rows in n cost about k * 2 * log2(n) attempts, far fewer than one per row.
    assert len(calls) < 37


def test_an_error_no_single_row_causes_is_raised_not_dead_lettered() -> None:
    def attempt(part: pa.Table) -> None:
        if part.num_rows > 3:
            raise ValueError("batch too large")

    with pytest.raises(ValueError, match="batch too large"):
        isolate(pa.table({"n": list(range(8))}), attempt, lambda e: True, "test")
