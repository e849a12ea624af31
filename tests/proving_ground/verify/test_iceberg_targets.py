"""The verifier's Iceberg targets count what the table holds and what its snapshots wrote: a
record appended twice, or written again by a commit that replaced its row, is counted twice;
files staged and never committed are not counted. They are named, never in the default set, and
refused on a store their warehouse cannot live on."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyiceberg.catalog import load_catalog
from pyiceberg.expressions import EqualTo

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.verify import MatrixOptions
from kafka_share_eos.proving_ground.verify.iceberg_targets import (
    TABLE,
    catalog_config,
    iceberg_landed,
)
from kafka_share_eos.proving_ground.verify.known_targets import SAFE_TARGETS, TARGETS
from kafka_share_eos.proving_ground.verify.records import EFFECT_SCHEMA
from kafka_share_eos.proving_ground.verify.targets import RunContext

ICEBERG_TARGETS = ["upsert-iceberg", "dedup-iceberg", "two-phase-iceberg"]


def rows(*offsets: int, amount: int = 1) -> pa.Table:
    return pa.table({
        "topic": ["t"] * len(offsets), "partition": [0] * len(offsets),
        "offset": list(offsets), "id": list(offsets), "account": [1] * len(offsets),
        "amount": [amount] * len(offsets), "valid": [True] * len(offsets),
    }, schema=EFFECT_SCHEMA)


def test_a_record_written_twice_is_counted_twice_even_once_its_row_was_replaced(
    tmp_path: Path,
) -> None:
    ctx = RunContext(tmp_path)
    TARGETS["upsert-iceberg"]().setup(ctx, [])
    config = catalog_config(ctx)
    table = load_catalog(config.pop("name"), **config).load_table(TABLE)

    assert iceberg_landed(ctx) == {"iceberg": {}, "iceberg writes": {}}
    table.append(rows(1, 2, 3))
    table.append(rows(3))
    table.overwrite(rows(2, amount=5), overwrite_filter=EqualTo("offset", 2))

    landed = iceberg_landed(ctx)
    assert landed["iceberg"] == {(0, 1): 1, (0, 2): 1, (0, 3): 2}
    # The overwrite wrote offset 2 again, and rewrote the file that held 1 and 3 without 2.
    assert landed["iceberg writes"] == {(0, 1): 2, (0, 2): 2, (0, 3): 3}


def test_files_no_snapshot_added_are_not_counted(tmp_path: Path) -> None:
    ctx = RunContext(tmp_path)
    TARGETS["upsert-iceberg"]().setup(ctx, [])
    config = catalog_config(ctx)
    table = load_catalog(config.pop("name"), **config).load_table(TABLE)
    table.append(rows(1))
    # A participant's staged file: in the table's location, listed by no snapshot.
    pq.write_table(rows(2), Path(table.location().removeprefix("file://")) / "staged.parquet")

    assert iceberg_landed(ctx) == {"iceberg": {(0, 1): 1}, "iceberg writes": {(0, 1): 1}}


def test_the_iceberg_targets_are_named_never_verified_by_default() -> None:
    assert set(ICEBERG_TARGETS) <= set(TARGETS)
    assert not set(ICEBERG_TARGETS) & set(SAFE_TARGETS)
    assert {TARGETS[name].extra for name in ICEBERG_TARGETS} == {"iceberg"}


def test_a_store_their_warehouse_cannot_live_on_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="upsert-iceberg, dedup-iceberg keep their "
                       "tables on local or s3, not on --storage abfs"):
        MatrixOptions(targets=["upsert-iceberg", "dedup-iceberg", "upsert-delta"],
                      storage="abfs").check()
    with pytest.raises(ConfigurationError, match="not on az://"):
        catalog_config(RunContext(Path("/nowhere"), store_root="az://c/run"))


def test_a_pipeline_without_the_stores_endpoint_is_told_which_variables_it_lacks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with pytest.raises(ConfigurationError, match="lacks AWS_ENDPOINT_URL"):
        catalog_config(RunContext(Path("/nowhere"), store_root="s3://bucket/run"))
