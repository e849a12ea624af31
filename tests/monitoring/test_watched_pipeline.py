"""A pipeline to export is named by its query, its source options and its strategy: the labels
come from the options as the source reads them, and bad options are refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_share_eos import PipelineMetrics, SourceOptionError
from kafka_share_eos.strategies import IdempotentUpsertSink


def options(journal: Path, **extra: str) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "broker:9092", "kafka.share.group.id": "orders-eos",
            "subscribe": "orders, refunds", "journalPath": str(journal), **extra}


def test_labels_come_from_the_query_the_options_and_the_strategy(tmp_path: Path) -> None:
    sink = IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'db'}", "orders", create_table=True,
                                    name="upsert")
    pipeline = PipelineMetrics("orders", options(tmp_path / "journal"), sink, log_ends=False)
    assert pipeline.labels == ("orders", "orders-eos", "orders,refunds")
    assert pipeline.strategy == "upsert"
    assert PipelineMetrics("bare", options(tmp_path), log_ends=False).strategy == ""
    sink.close()


def test_options_the_source_would_refuse_are_refused_by_name(tmp_path: Path) -> None:
    given = options(tmp_path)
    del given["kafka.share.group.id"]
    with pytest.raises(SourceOptionError, match=r"kafka\.share\.group\.id"):
        PipelineMetrics("orders", given)
