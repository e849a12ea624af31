"""The Iceberg benchmark: its batches hold what its rows say (redeliveries of the previous
batch, newer versions of rows anywhere in the table), a tiny run ends with both upserts holding
every key once and reports every row, and the rows carry their targets."""

from __future__ import annotations

import math

import pyarrow.compute as pc

from kafka_share_eos.proving_ground.bench.iceberg import iceberg_ratios, run, upsert_batches


def test_applied_batches_redeliver_the_previous_batch_and_newer_ones_raise_the_version() -> None:
    applied = upsert_batches(1_000, 100, 3, "applied")
    newer = upsert_batches(1_000, 100, 3, "newer")

    for number, batch in enumerate(applied):
        ids = batch["id"].to_pylist()
        head = 1_000 + 90 * number
        assert sorted(ids[10:]) == list(range(head, head + 90))
        assert all(head - 90 <= i < head for i in ids[:10])  # the previous batch's new ids
        assert set(batch["version"].to_pylist()) == {1}
    for number, batch in enumerate(newer):
        assert all(i < 1_000 + 90 * number for i in batch["id"].to_pylist()[:10])
        assert set(batch["version"].to_pylist()) == {number + 2}
    assert pc.count_distinct(newer[2]["id"]).as_py() == 100


def test_a_tiny_run_reports_every_row_with_its_target() -> None:
    result = run(base_rows=2_000, batch_rows=200, batches=2, dedup_batch_rows=10_000,
                 dedup_batches=2)

    rows = {row.name: row for row in iceberg_ratios(result)}
    assert {name: row.target_text for name, row in rows.items()} == {
        "Iceberg upsert, 10% already applied vs pyiceberg append": "≥ 0.7x",
        "Iceberg upsert, 10% newer versions vs pyiceberg append": "≥ 0.7x",
        "Iceberg upsert, 10% already applied vs pyiceberg Table.upsert": "≥ 5x",
        "Iceberg upsert, 10% newer versions vs pyiceberg Table.upsert": "≥ 5x",
        "dedup store into Iceberg vs Iceberg append, 10k-row batches": "≥ 0.6x",
    }
    for row in rows.values():
        assert row.benchmark == "iceberg" and math.isfinite(row.value) and row.value > 0, row
    assert result["upsert"]["newer"]["write_path"] == "overwrite"
    assert result["upsert"]["applied"]["write_path"] == "append"
