"""Two applications on one share group upsert one Iceberg table while its upkeep runs beside
them: two streaming queries (each its own checkpoint, journal and so its own ``app_id``) drain
the group into the table through ``IdempotentUpsertSink.iceberg`` while a compaction follows
every commit and expires every snapshot older than now. The queries' commits lose races to each
other and to the compactions, and start over on the new snapshot: every record lands once, and
each application's watermark survives the expiry of the snapshots that carried it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from helpers import produce
from helpers.iceberg import catalog_config, load, offsets, open_catalog
from helpers.iceberg_upkeep import IcebergUpkeep
from helpers.pauses import Background
from helpers.streaming import run_available_now, share_stream

from kafka_share_eos.iceberg.snapshots import commit_record
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic
from kafka_share_eos.strategies import IdempotentUpsertSink

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

pytestmark = [pytest.mark.spark, pytest.mark.timeout(300)]

RUN_SECONDS = 240


def test_two_queries_on_one_share_group_land_every_record_once_beside_compaction_and_expiry(
    spark: SparkSession, share_topic: ShareTopic, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    written = produce(share_topic.bootstrap_servers, share_topic.topic,
                      [b"v%d" % i for i in range(80)], partitions=share_topic.partitions)
    config = catalog_config(request, tmp_path, "sqlite")
    sinks = {name: IdempotentUpsertSink.iceberg("db.events", catalog=config, create_table=True,
                                                max_commit_attempts=30)
             for name in ("a", "b")}

    with IcebergUpkeep(open_catalog(config), "db.events") as upkeep:
        runs = [
            Background(lambda name=name: run_available_now(
                share_stream(spark, share_topic, tmp_path / f"{name}-journal",
                             **{"kafka.max.poll.records": "20"}),
                tmp_path / f"{name}-checkpoint", sinks[name], timeout=RUN_SECONDS,
            ))
            for name in sinks
        ]
        for run in runs:
            run.join(RUN_SECONDS + 30)
            run.outcome()
        upkeep.wait_caught_up()
        upkeep.finish()

    assert offsets(config) == sorted(written)
    assert upkeep.compactions >= 1
    # Each query's last batch that wrote is its watermark, though expiry left none of the
    # snapshots that carried it.
    record = commit_record(load(config))
    for sink in sinks.values():
        wrote = [report.batch_id for report in sink.reports if report.rows_written]
        app_id = sink.writer.app_id  # type: ignore[attr-defined]
        assert record.committed(app_id) == (max(wrote) if wrote else None)
    assert sum(report.rows_written for sink in sinks.values() for report in sink.reports) == len(
        written)
