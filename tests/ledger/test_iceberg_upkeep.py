"""Pruning, compaction, snapshot expiry and the size of an Iceberg identity ledger on pyiceberg's
SQL catalog: what may go goes, the batches claimed are never forgotten, and a claim racing the
upkeep starts over rather than losing either."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pyarrow as pa
import pytest
from helpers.iceberg import OtherWriterFirst, catalog_config, load, sql_catalog
from helpers.ledgers import NO_AGE, partition_run
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.table import Table
from typer.testing import CliRunner

from kafka_share_eos.cli.dedup import dedup
from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.ledger import RetentionPolicy, ledger_stats
from kafka_share_eos.ledger.iceberg_ledger import IcebergLedger
from kafka_share_eos.ledger.iceberg_upkeep import UPKEEP_APPLICATION, compact, prune, stats

pytestmark = pytest.mark.timeout(120)


@pytest.fixture
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, "sqlite")


def filled(config: dict[str, str], batches: int = 4, size: int = 10) -> IcebergLedger:
    """Batch ``b`` claims offsets [b*size, (b+1)*size) of partitions 0 and 1 of topic ``t``."""
    ledger = IcebergLedger("db.ledger", catalog=config, app_id="a")
    for b in range(batches):
        ledger.claim(pa.concat_tables([partition_run("t", p, b * size, (b + 1) * size)
                                       for p in (0, 1)]), b)
    return ledger


def warehouse(config: dict[str, str]) -> Path:
    return Path(urlparse(config["warehouse"]).path)


def offsets(config: dict[str, str], partition: int) -> list[int]:
    rows = load(config, "db.ledger").scan().to_arrow()
    return sorted(o for p, o in zip(rows["partition"].to_pylist(), rows["offset"].to_pylist(),
                                    strict=True) if p == partition)


def test_pruning_drops_what_the_offset_window_and_the_age_allow(config: dict[str, str]) -> None:
    ledger = filled(config)
    ledger.claim(partition_run("t", 0, 40, 60), 4)  # partition 0 runs ahead
    young = prune(ledger, RetentionPolicy(offset_window=15, min_age=dt.timedelta(hours=1)))
    assert young.deleted_rows == 0  # everything is younger than an hour

    pruned = ledger.prune(RetentionPolicy(offset_window=15, min_age=NO_AGE))
    assert pruned.cutoffs == {("t", 0): 44, ("t", 1): 24}
    assert pruned.deleted_rows == 44 + 24
    assert offsets(config, 0) == list(range(44, 60))
    assert offsets(config, 1) == list(range(24, 40))
    # The watermark stays: a replay of the last batch owns its claims, an older batch is refused.
    assert ledger.last_batch() == 4
    assert ledger.claim(partition_run("t", 0, 44, 60), 4).rows.num_rows == 16

    aged = prune(ledger, RetentionPolicy(offset_window=None, min_age=NO_AGE),
                 now=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1))
    assert aged.deleted_rows == 32 and offsets(config, 0) == []


def test_compaction_rewrites_one_file_per_partition_and_expiry_keeps_the_watermarks(
    config: dict[str, str],
) -> None:
    ledger = filled(config)
    before = stats(ledger)
    assert (before.rows, before.files, before.last_batch) == (80, 8, 3)
    assert [(p.partition, p.files, p.min_offset, p.max_offset) for p in before.partitions] == [
        (0, 4, 0, 39), (1, 4, 0, 39)]

    done = compact(ledger, vacuum_retention=dt.timedelta(0))
    after = ledger_stats(ledger)
    assert (done.files_removed, done.files_added) == (8, 2)
    assert (after.rows, after.files, after.last_batch) == (80, 2, 3)
    assert len(load(config, "db.ledger").snapshots()) == 1
    # Vacuumed: the replaced data files, and the expired snapshots' manifests and lists.
    stored = set(map(str, warehouse(config).rglob("*.parquet")))
    assert stored == {path.removeprefix("file://") for path in
                      load(config, "db.ledger").inspect.files()["file_path"].to_pylist()}
    assert done.files_vacuumed > 8
    summary = load(config, "db.ledger").current_snapshot().summary  # type: ignore[union-attr]
    assert summary.additional_properties["kafka-share-eos.application"] == UPKEEP_APPLICATION
    assert ledger.claim(partition_run("t", 0, 30, 40), 3).rows["offset"].to_pylist() == list(
        range(30, 40))  # batch 3 again: its own claims, found after the rewrite
    assert ledger.compact().files_added == 0  # nothing left to rewrite


class CompactsAfterLoading(SqlCatalog):
    """A SQL catalog that runs ``after_next_load`` once it loaded a table for the next time."""

    after_next_load: Any = None

    def load_table(self, identifier: Any) -> Table:
        table = super().load_table(identifier)
        if CompactsAfterLoading.after_next_load is not None:
            run, CompactsAfterLoading.after_next_load = CompactsAfterLoading.after_next_load, None
            run()
        return table


@pytest.mark.parametrize("upkeep", ["pruning", "compaction"])
def test_a_claim_decided_before_an_upkeep_commit_starts_over_on_its_snapshot(
    config: dict[str, str], upkeep: str,
) -> None:
    filled(config)
    other = IcebergLedger("db.ledger", catalog=config)
    kind: type[SqlCatalog]
    if upkeep == "pruning":  # it commits between the claim's read and the claim's commit
        kind, kept = OtherWriterFirst, list(range(34, 45))
        OtherWriterFirst.before_next = lambda: prune(
            other, RetentionPolicy(offset_window=5, min_age=NO_AGE))
    else:  # it vacuums the files the snapshot the claim loaded lists
        kind, kept = CompactsAfterLoading, list(range(45))
        CompactsAfterLoading.after_next_load = lambda: compact(
            other, vacuum_retention=dt.timedelta(0))
    racing = IcebergLedger("db.ledger", catalog=sql_catalog(config, kind), app_id="b")
    claim = racing.claim(partition_run("t", 0, 35, 45), 0)

    assert claim.attempts == 2
    assert (claim.rows["offset"].to_pylist(), claim.held_elsewhere) == (list(range(40, 45)), 5)
    assert offsets(config, 0) == kept


def test_what_an_iceberg_ledger_refuses(config: dict[str, str]) -> None:
    ledger = IcebergLedger("db.ledger", catalog=config, identity=["order_id"])
    with pytest.raises(LocationNotFoundError, match="no Iceberg ledger table"):
        stats(ledger)
    assert prune(ledger, RetentionPolicy(offset_window=None)).deleted_rows == 0
    ledger.claim(pa.table({"order_id": ["o1"]}), 0)
    with pytest.raises(ConfigurationError, match="record identity"):
        prune(ledger, RetentionPolicy())
    with pytest.raises(ConfigurationError, match=r"write\.target-file-size-bytes"):
        compact(ledger, target_size=1 << 20)
    with pytest.raises(ConfigurationError, match="vacuum_retention"):
        compact(ledger, vacuum_retention=dt.timedelta(seconds=-1))
    assert stats(ledger).partitions == []


def test_the_dedup_commands_prune_compact_and_describe_an_iceberg_ledger(
    config: dict[str, str],
) -> None:
    filled(config)
    catalog = [option for key, value in config.items()
               for option in ("--iceberg-catalog", f"{key}={value}")]
    runner = CliRunner()

    pruned = runner.invoke(dedup, ["prune", "db.ledger", "--offset-window", "15",
                                   "--min-age-seconds", "0", *catalog])
    assert pruned.exit_code == 0, pruned.output
    assert "pruned 48 identities" in pruned.output
    assert offsets(config, 0) == offsets(config, 1) == list(range(24, 40))
    compacted = runner.invoke(dedup, ["compact", "db.ledger", "--vacuum-retention-hours", "0",
                                      *catalog])
    assert compacted.exit_code == 0, compacted.output
    assert "compacted 4 files into 2; vacuumed" in compacted.output
    stats = runner.invoke(dedup, ["stats", "db.ledger", "--app-id", "a", *catalog])
    assert stats.exit_code == 0, stats.output
    assert "last batch 3, 32 identities in 2 files" in stats.output

    missing = runner.invoke(dedup, ["stats", "db.absent", *catalog])
    assert missing.exit_code == 2
    assert "no Iceberg ledger table" in missing.output
    storage = runner.invoke(dedup, ["stats", "db.ledger", "-o", "a=b", *catalog])
    assert storage.exit_code == 2 and "--iceberg-catalog" in storage.output
