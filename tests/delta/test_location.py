"""Delta tables on S3 with several writers: every commit asks for a conditional put, so two
applications on one ledger and a compaction of the target never lose a commit (SeaweedFS, a
real S3 server; the applications are separate processes configured from the environment, as
Spark executors would be)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers import applications
from helpers.applications import finish
from helpers.ledgers import DEDUP_APPLICATION
from helpers.maintenance import COMPACTION

from kafka_share_eos.delta.location import DeltaLocation
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.launchers.s3_server import S3Server

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with S3Server() as server:
        yield server


def test_commits_on_s3_ask_for_conditional_puts_and_refuse_them_turned_off() -> None:
    assert DeltaLocation("s3://b/t").options() == {"aws_conditional_put": "etag"}
    assert DeltaLocation("s3://b/t", {"AWS_CONDITIONAL_PUT": "etag"}).options() == {
        "AWS_CONDITIONAL_PUT": "etag"}
    locked = {"aws_conditional_put": "disabled", "aws_s3_locking_provider": "dynamodb"}
    assert DeltaLocation("s3://b/t", locked).options() == locked
    assert DeltaLocation("/local/t").options() is None

    with pytest.raises(ConfigurationError, match=r"conditional_put=disabled.*lost"):
        DeltaLocation("s3://b/t", {"conditional_put": "disabled"})


def test_two_applications_on_one_s3_ledger_and_a_compaction_lose_no_commit(
    s3: S3Server, request: pytest.FixtureRequest
) -> None:
    name = request.node.name[:40]
    ledger, sink = s3.url(f"{name}/ledger"), s3.url(f"{name}/sink")
    # Each application holds every record once, in batches of 5 that overlap the other's:
    # after lock handoffs both see offsets 0-59, in opposite orders.
    offsets = list(range(60))
    batches = {
        "app-a": [(i, [("t", 0, o) for o in offsets[i * 5:(i + 1) * 5]]) for i in range(12)],
        "app-b": [(i, [("t", 0, o) for o in reversed(offsets)][i * 5:(i + 1) * 5])
                  for i in range(12)],
    }
    apps = [applications.start(DEDUP_APPLICATION, ledger, sink, app, json.dumps(held),
                                **s3.environment())
            for app, held in batches.items()]
    # A maintenance job compacting the target while both write to it.
    compaction = applications.start(COMPACTION, sink, "6", **s3.environment())
    reports = [finish(app, timeout=240) for app in apps]
    assert len(finish(compaction, timeout=240)) == 6

    options = s3.storage_options()
    applied = pa.table(DeltaTable(sink, storage_options=options).to_pyarrow_table())
    written = sum(rows for app in reports for rows, _ in app)
    assert Counter(applied["offset"].to_pylist()) == Counter(offsets)  # each record once
    assert written == len(offsets)  # every commit an application counted is in the table
    claims = DeltaTable(ledger, storage_options=options).to_pyarrow_table()
    assert sorted(claims["offset"].to_pylist()) == offsets
