"""An Iceberg table a writer commits to: its settings refused when built, a missing table refused
or created, and a commit that keeps losing to other writers given up naming how often."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from helpers.iceberg import catalog_config, open_catalog

from kafka_share_eos._libs import iceberg_errors
from kafka_share_eos.errors import (
    CommitConflictError,
    MissingColumnsError,
    SinkConfigurationError,
    TargetTableError,
)
from kafka_share_eos.sinks.iceberg_target import IcebergTarget

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def config(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, str]:
    return catalog_config(request, tmp_path, "sqlite")


def target(config: dict[str, str], **options: object) -> IcebergTarget:
    return IcebergTarget("db.t", config, create_table=bool(options.pop("create_table", True)),
                         what="a test", **options)  # type: ignore[arg-type]


def test_settings_a_writer_cannot_use_are_refused_when_built(config: dict[str, str]) -> None:
    with pytest.raises(SinkConfigurationError, match="with its namespace"):
        IcebergTarget("events", config, create_table=True, what="a test")
    with pytest.raises(SinkConfigurationError, match="max_commit_attempts must be >= 1"):
        target(config, max_commit_attempts=0)


def test_a_missing_table_is_created_from_the_schema_only_when_allowed(
    config: dict[str, str],
) -> None:
    schema = pa.schema([("id", pa.int64())])
    with pytest.raises(TargetTableError, match="does not exist"):
        target(config, create_table=False).opened(schema)

    table = target(config).opened(schema)

    assert table.schema().column_names == ["id"]
    assert open_catalog(config).table_exists("db.t")
    target(config, create_table=False).check_target(["id"])
    with pytest.raises(MissingColumnsError, match="other"):
        target(config).check_target(["id", "other"])


def test_a_commit_losing_on_every_attempt_is_given_up_naming_the_attempts(
    config: dict[str, str],
) -> None:
    calls = []

    def loses() -> None:
        calls.append(1)
        raise iceberg_errors.CommitFailedException("another writer committed first")

    with pytest.raises(CommitConflictError, match="first on 3 attempts in a row"):
        target(config, max_commit_attempts=3, retry_backoff_seconds=0.001).committing(
            "writing", loses)
    assert len(calls) == 3
    assert target(config).committing("writing", lambda: 7) == 7
