"""A journal's location carries its store's settings to every process that opens it, and
never shows them."""

from __future__ import annotations

import pickle

from kafka_share_eos.journal import Journal
from kafka_share_eos.source.options import SourceOptions
from kafka_share_eos.storage import Location


def test_storage_options_reach_the_store_and_stay_out_of_reprs() -> None:
    options = SourceOptions.parse({
        "kafka.bootstrap.servers": "b:9092", "kafka.share.group.id": "g", "subscribe": "t",
        "journalPath": "s3://bucket/journal", "consumers": "4",
        "storage.aws_endpoint": "http://127.0.0.1:1", "storage.aws_secret_access_key": "hush",
    })

    assert options.journal == Location("s3://bucket/journal", {
        "aws_endpoint": "http://127.0.0.1:1", "aws_secret_access_key": "hush"})
    assert "hush" not in repr(options) and "hush" not in repr(options.journal)
    assert pickle.loads(pickle.dumps(Journal(options.journal))).where == options.journal
