"""The checkpoint-dedup store keeping its ledger bounded (a Delta table or an Iceberg one), and
the dedup CLI, on real Delta tables."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.ledgers import (
    LEDGER_BACKENDS,
    NO_AGE,
    delta_rows,
    filled_ledger,
    ledger_spec,
    opened_ledger,
    partition_run,
)
from typer.testing import CliRunner

from kafka_share_eos.cli.dedup import dedup
from kafka_share_eos.ledger.retention import RetentionPolicy
from kafka_share_eos.ledger.stats import ledger_stats
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("backend", LEDGER_BACKENDS)
def test_automatic_prune_and_compaction_keep_the_ledger_bounded(
    request: pytest.FixtureRequest, tmp_path: Path, backend: str,
) -> None:
    ledger, sink = ledger_spec(request, tmp_path, backend), str(tmp_path / "sink")
    store = CheckpointDedupStore(
        opened_ledger(ledger), DeltaAppendSink(sink),
        retention=RetentionPolicy(offset_window=10, min_age=NO_AGE),
        prune_every=2, compact_every=4, vacuum_retention=NO_AGE,
    )
    for b in range(8):
        # every batch redelivers the previous batch's last 2 records, which were applied
        store.apply(partition_run("t", 0, max(0, b * 5 - 2), b * 5 + 5), b)

    assert delta_rows(sink) == [("t", 0, o) for o in range(40)]
    stats = ledger_stats(store.ledger)
    assert stats.rows <= 10 + 5 * 2  # the window plus the batches since the last prune
    assert stats.files == 1
    assert stats.last_batch == 7


def test_cli_prune_compact_and_stats_on_a_real_ledger(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger")
    runner = CliRunner()

    pruned = runner.invoke(
        dedup, ["prune", ledger.uri, "--offset-window", "15", "--min-age-seconds", "0"]
    )
    assert pruned.exit_code == 0, pruned.output
    assert "pruned 48 identities" in pruned.output
    assert delta_rows(ledger.uri) == [("t", p, o) for p in (0, 1) for o in range(24, 40)]

    compacted = runner.invoke(dedup, ["compact", ledger.uri, "--vacuum-retention-hours", "0"])
    assert compacted.exit_code == 0, compacted.output
    stats = runner.invoke(dedup, ["stats", ledger.uri])
    assert stats.exit_code == 0, stats.output
    assert "last batch 3, 32 identities in 2 files" in stats.output

    missing = runner.invoke(dedup, ["stats", str(tmp_path / "absent")])
    assert missing.exit_code == 2
    assert "no Delta ledger table" in missing.output
    bad = runner.invoke(dedup, ["prune", ledger.uri, "-o", "novalue"])
    assert bad.exit_code == 2
    assert "KEY=VALUE" in bad.output
