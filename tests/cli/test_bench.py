"""The benchmark suite runs every benchmark and reports each row with its target, the machine,
the versions and the sizes.

The suite runs at tiny sizes in a process of its own (the command's ``--quick`` sizes take minutes
on 2 cores); only the shape of the report is checked: timings on a shared machine are not
assertable.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from helpers.scripts import run_python
from rich.console import Console

from kafka_share_eos.cli.bench import markdown, render
from kafka_share_eos.proving_ground.bench.suite import BENCHMARKS, Sizes, SuiteResult

pytestmark = [pytest.mark.spark, pytest.mark.postgres, pytest.mark.kafka,
              pytest.mark.timeout(1000)]

TINY = Sizes(
    source_records=6_000, source_partitions=4, source_poll_records=1_000, source_rounds=1,
    consumers_records=8_000, consumers_partitions=8, consumers_per_trigger=2_000,
    consumers_rounds=1,
    end_to_end_records=4_000, end_to_end_per_trigger=1_000, end_to_end_rounds=1,
    memory_batches=9,
    upsert_rows=5_000, upsert_repeats=1, delta_base_rows=20_000, delta_batch_rows=1_000,
    delta_batches=3,
    two_phase_rows_per_batch=1_000, two_phase_batches=2, two_phase_repeats=1,
    dedup_ledger_sizes=(1_000, 10_000), dedup_batch_rows=1_000, dedup_batches=3,
    dedup_batch_sizes=(1_000,), kafka_topic_batch_rows=1_000, kafka_topic_batches=3,
    consumers_drain_idle_ms=2000, object_store_records=8_000, object_store_rounds=1,
    object_store_dedup_batches=3, iceberg_base_rows=5_000, iceberg_batch_rows=1_000,
    iceberg_batches=2, iceberg_dedup_batches=2,
)

# The Apache Kafka peers start a broker, four Spark applications and the pyspark 4.2 tier's:
# tests/proving_ground/bench/test_peers.py runs them (marked full), not this run; the
# delta-spark engines and the slow effect run in that tier too
# (tests/proving_ground/bench/test_delta_spark.py, test_slow_effect.py).
# The object store's two Spark applications and S3 server would take this run past its
# timeout: a run of its own below (marked full).
IN_TINY_RUN = [name for name in BENCHMARKS
               if name not in ("kafka peers", "delta-spark", "object-store", "metrics",
                               "connect", "slow effect")]

SUITE = """
import json, sys
from kafka_share_eos.proving_ground.bench.suite import Sizes, run_suite
sizes = Sizes(**{k: tuple(v) if isinstance(v, list) else v
                 for k, v in json.loads(sys.argv[1]).items()})
print(json.dumps(run_suite(sizes, only=json.loads(sys.argv[2])).to_json(), default=str))
"""


def _tiny_suite(only: list[str]) -> dict[str, Any]:
    result = run_python("-c", SUITE, json.dumps(asdict(TINY)), json.dumps(only), timeout=960)
    report: dict[str, Any] = json.loads(result.stdout.splitlines()[-1])
    return report


@pytest.fixture(scope="module")
def tiny_run() -> dict[str, Any]:
    return _tiny_suite(IN_TINY_RUN)


def test_every_benchmark_reports_numeric_ratios(tiny_run: dict[str, Any]) -> None:
    assert tiny_run["failures"] == {}
    by_benchmark: dict[str, list[dict[str, Any]]] = {}
    for row in tiny_run["ratios"]:
        by_benchmark.setdefault(row["benchmark"], []).append(row)
    assert set(by_benchmark) == set(IN_TINY_RUN) == set(tiny_run["seconds"])
    for rows in by_benchmark.values():
        for row in rows:
            assert isinstance(row["value"], float) and math.isfinite(row["value"]), row
            assert row["value"] > 0, row
            assert (row["target"] is None) == (row["meets"] is None), row
    names = {row["name"] for row in tiny_run["ratios"]}
    assert "Postgres upsert, new keys vs COPY append" in names
    assert "two-phase, Postgres set-based effect vs upsert sink" in names
    assert "consumers=4 vs 4 raw ShareConsumer processes, records per second" in names
    assert "consumers=4 vs 1, driver CPU per micro-batch" in names
    assert ("two-phase, Postgres per-record SQL effect vs the same statements at least once"
            in names)
    assert "dedup store vs Delta append, 1k-row batches" in names
    assert "ledger growth: batch cost at 10k vs 1k identities" in names
    assert "runner CPU per record" in names
    assert any(name.startswith("Spark query, afterCommit") for name in names)
    assert "Kafka topic sink vs idempotent producer, 1k-record batches" in names
    assert "Iceberg upsert, 10% newer versions vs pyiceberg Table.upsert" in names
    assert "dedup store into Iceberg vs Iceberg append, 1k-row batches" in names
    for strategy in ("upsert, Postgres", "upsert, Delta", "dedup", "two-phase", "Kafka topic",
                     "upsert, Iceberg"):
        assert f"end-to-end {strategy}: exactly once vs at least once" in names
    memory = tiny_run["results"]["end-to-end"]["memory"]
    # Batches are counted as they were sampled: a loaded machine may sample fewer than 9.
    batches, warm_up = int(memory["batches"]), int(memory["warm_up"])
    assert batches > warm_up, memory
    assert f"runner resident memory over {batches} batches: last vs batch {warm_up}" in names
    assert memory["runner_first_mib"] > 10 and memory["driver_first_mib"] > 100, memory


def test_report_names_the_machine_and_the_sizes(tiny_run: dict[str, Any]) -> None:
    machine = tiny_run["machine"]
    assert int(machine["cpus"]) >= 1
    for key in ("cpu model", "memory", "python", "spark", "librdkafka", "postgres"):
        assert machine[key] and machine[key] not in ("unknown", "not used"), key
    assert tiny_run["sizes"]["dedup_ledger_sizes"] == list(TINY.dedup_ledger_sizes)


def test_table_and_markdown_show_every_row_with_its_target(
    tiny_run: dict[str, Any], tmp_path: Path
) -> None:
    ratios = [
        ratio
        for name, (_, reduce) in BENCHMARKS.items() if name in IN_TINY_RUN
        for ratio in reduce(tiny_run["results"][name])
    ]
    assert [r.to_json() for r in ratios] == tiny_run["ratios"]
    result = SuiteResult(TINY, tiny_run["machine"], ratios, seconds=tiny_run["seconds"])
    console = Console(record=True, width=400, color_system=None)
    console.print(render(result))
    text = console.export_text()
    page = markdown(result)
    for ratio in ratios:
        assert ratio.name in text and ratio.name in page
        assert f"{ratio.value:.2f}" in text
    assert "≥ 0.7x" in text and "≤ 5 µs/record" in text
    # The console wraps the caption: compare it without line breaks.
    for shown in (" ".join(text.split()), page):
        assert f"PostgreSQL {tiny_run['machine']['postgres']}" in shown
        assert "Sizes: source 6k records over 4 partitions" in shown
        assert "1 round(s), 2 s idle end; end-to-end" in shown
    assert page.count("\n| ") == len(ratios) + 2  # the header, its rule, one line per row


@pytest.mark.full
def test_object_store_rows_compare_s3_with_the_local_disk() -> None:
    report = _tiny_suite(["object-store"])

    assert report["failures"] == {}
    rows = {row["name"]: row for row in report["ratios"]}
    assert {row["benchmark"] for row in rows.values()} == {"object-store"}
    for row in rows.values():
        assert isinstance(row["value"], float) and math.isfinite(row["value"]), row
        assert row["value"] > 0, row
    for consumers, target in ((1, "≥ 0.8"), (4, "≥ 0.7")):
        row = rows[f"consumers={consumers}, journal on S3 vs local journal, records per second"]
        assert row["target"] == target, row
    # 1k-row batches in this run: the 0.6 target is the 10k-row batches'.
    assert rows["dedup store on S3 vs S3 Delta append, 1k-row batches"]["target"] is None
    journal = report["results"]["object-store"]["journal"]
    assert len(journal["4"]["s3"]["slots"]) == 4, journal["4"]


def test_the_command_offers_quick_json_and_save() -> None:
    help_text = run_python("-m", "kafka_share_eos.cli.main", "bench", "--help", timeout=60).stdout
    for option in ("--quick", "--json", "--save"):
        assert option in help_text
