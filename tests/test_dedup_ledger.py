"""The identity ledger's layout, pruning, compaction and CLI, on real Delta tables."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from test_dedup_store import delta_rows, records
from typer.testing import CliRunner

from kafka_share_eos.cli.dedup import dedup
from kafka_share_eos.delta import handles
from kafka_share_eos.errors import AppIdConflictError
from kafka_share_eos.ledger.compaction import compact
from kafka_share_eos.ledger.identity_ledger import IdentityLedger, offset_ranges
from kafka_share_eos.ledger.retention import RetentionPolicy, prune
from kafka_share_eos.ledger.stats import ledger_stats
from kafka_share_eos.sinks.delta_append import DeltaAppendSink
from kafka_share_eos.strategies.checkpoint_dedup import CheckpointDedupStore

pytestmark = pytest.mark.timeout(120)

NO_AGE = dt.timedelta(0)


def test_offset_ranges_split_at_large_gaps() -> None:
    batch = records(("t", 0, 5), ("t", 0, 3), ("t", 1, 4), ("t", 0, 2000), ("t", 0, 2001),
                    ("t", 0, 9000), ("t", 0, 4), ("u", 0, 7))
    assert offset_ranges(batch, max_gap=1000) == {
        ("t", 0): [(3, 5), (2000, 2001), (9000, 9000)], ("t", 1): [(4, 4)], ("u", 0): [(7, 7)],
    }
    assert offset_ranges(batch, max_gap=1000, max_ranges=2)[("t", 0)] == [(3, 9000)]


def partition_run(topic: str, partition: int, start: int, stop: int) -> pa.Table:
    return records(*[(topic, partition, o) for o in range(start, stop)])


def filled_ledger(path: Path, batches: int = 4, size: int = 10) -> IdentityLedger:
    """Batch ``b`` holds offsets [b*size, (b+1)*size) of partitions 0 and 1 of topic ``t``."""
    ledger = IdentityLedger(str(path))
    for b in range(batches):
        both = pa.concat_tables(
            [partition_run("t", p, b * size, (b + 1) * size) for p in (0, 1)]
        )
        assert ledger.claim(both, b).claimed_now == both.num_rows
    return ledger


def files_read_by_lookup(ledger: IdentityLedger, batch: pa.Table) -> int:
    predicate = ledger.lookup_predicate(batch)
    return len(DeltaTable(ledger.uri).file_uris(file_pruning_predicate=predicate))


def test_lookup_reads_only_files_that_can_match(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger", size=1000)
    assert len(DeltaTable(ledger.uri).file_uris()) == 8

    assert files_read_by_lookup(ledger, partition_run("t", 0, 4000, 4500)) == 0
    assert files_read_by_lookup(ledger, records(("t", 1, 2500), ("t", 1, 4100))) == 1
    assert files_read_by_lookup(ledger, records(("t", 1, 1500), ("t", 1, 2500))) == 2
    assert files_read_by_lookup(ledger, records(("t", 0, 5), ("t", 1, 3500))) == 2
    new = ledger.new_rows(records(("t", 0, 5), ("t", 1, 3500), ("t", 1, 4000), ("u", 0, 1)))
    assert new.column("offset").to_pylist() == [4000, 1]


def test_claiming_a_batch_again_returns_its_own_claims_and_writes_nothing(
    tmp_path: Path,
) -> None:
    ledger = filled_ledger(tmp_path / "ledger", batches=2)
    again = ledger.claim(partition_run("t", 0, 10, 20), 1)
    assert (again.claimed_now, again.held_elsewhere) == (0, 0)
    assert again.rows.column("offset").to_pylist() == list(range(10, 20))
    # the same identities under an earlier batch of this app are someone else's claim
    elsewhere = ledger.claim(partition_run("t", 0, 0, 5), 1)
    assert (elsewhere.rows.num_rows, elsewhere.held_elsewhere) == (0, 5)
    assert ledger.last_batch() == 1
    assert len(delta_rows(ledger.uri)) == 40


def test_an_older_batch_of_the_same_app_id_is_refused(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger", batches=3)
    with pytest.raises(AppIdConflictError, match="batch 2 of app_id"):
        ledger.claim(partition_run("t", 0, 500, 505), 1)
    assert len(delta_rows(ledger.uri)) == 60


def test_prune_keeps_the_offset_window_of_each_partition(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger")
    ledger.claim(partition_run("t", 1, 40, 60), 4)  # partition 1 runs ahead: max 59, p0 max 39

    result = prune(ledger, RetentionPolicy(offset_window=15, min_age=NO_AGE))

    assert result.cutoffs == {("t", 0): 24, ("t", 1): 44}
    kept = delta_rows(ledger.uri)
    assert kept == [("t", 0, o) for o in range(24, 40)] + [("t", 1, o) for o in range(44, 60)]
    assert result.deleted_rows == 24 + 44
    assert ledger.last_batch() == 4


def test_prune_waits_for_the_age_guard(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger")
    policy = RetentionPolicy(offset_window=15, min_age=dt.timedelta(minutes=10))

    assert prune(ledger, policy).deleted_rows == 0
    later = dt.datetime.now(dt.UTC) + dt.timedelta(minutes=11)
    assert prune(ledger, policy, now=later).deleted_rows == 2 * 24


def test_business_key_ledgers_prune_by_age_only(tmp_path: Path) -> None:
    ledger = IdentityLedger(str(tmp_path / "ledger"), identity=["order_id"])
    ledger.claim(pa.table({"order_id": ["a", "b"]}), 0)
    with pytest.raises(ValueError, match="offset_window=None"):
        prune(ledger, RetentionPolicy(min_age=NO_AGE))
    later = dt.datetime.now(dt.UTC) + dt.timedelta(seconds=1)
    result = prune(ledger, RetentionPolicy(offset_window=None, min_age=NO_AGE), now=later)
    assert result.deleted_rows == 2
    with pytest.raises(ValueError, match="prunes all"):
        RetentionPolicy(offset_window=None, min_age=None)


def test_compaction_keeps_every_identity_and_the_batch_marker(tmp_path: Path) -> None:
    ledger = filled_ledger(tmp_path / "ledger", batches=6)
    before = delta_rows(ledger.uri)

    result = compact(ledger, vacuum_retention=NO_AGE)

    assert (result.files_removed, result.files_added) == (12, 2)
    assert result.files_vacuumed == 12
    assert delta_rows(ledger.uri) == before
    assert ledger.last_batch() == 5
    fresh = IdentityLedger(ledger.uri).new_rows(records(("t", 0, 59), ("t", 0, 60)))
    assert fresh.column("offset").to_pylist() == [60]


def test_automatic_prune_and_compaction_keep_the_ledger_bounded(tmp_path: Path) -> None:
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    store = CheckpointDedupStore(
        ledger, DeltaAppendSink(sink),
        retention=RetentionPolicy(offset_window=10, min_age=NO_AGE),
        prune_every=2, compact_every=4, vacuum_retention=NO_AGE,
    )
    for b in range(8):
        # every batch redelivers the previous batch's last 2 records, which were applied
        store.apply(partition_run("t", 0, max(0, b * 5 - 2), b * 5 + 5), b)

    assert delta_rows(sink) == [("t", 0, o) for o in range(40)]
    stats = ledger_stats(IdentityLedger(ledger))
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


def test_a_sink_knows_its_own_last_batch_until_another_writer_commits(tmp_path: Path) -> None:
    """Checking "already appended?" skips the log only while the table is at its own commit."""
    uri = str(tmp_path / "sink")
    sink = DeltaAppendSink(uri, app_id="app")
    assert sink(records(("t", 0, 1)), 0)
    assert sink(records(("t", 0, 2)), 1)
    assert not sink(records(("t", 0, 2)), 1)
    # Another writer under the same app_id records batch 5; a refreshed handle sees it.
    DeltaAppendSink(uri, app_id="app")(records(("t", 0, 3)), 5)
    table = sink.location.table()
    assert table is not None
    assert sink.location.transaction_version(table, "app") == 5
    assert not sink(records(("t", 0, 4)), 4)
    assert sorted(delta_rows(uri)) == [("t", 0, 1), ("t", 0, 2), ("t", 0, 3)]


def test_a_kept_handle_is_reopened_after_a_run_of_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A handle that has seen many versions is replaced by one opened anew (delta-rs' commits
    through an old handle slow down), and what this process knows of its commits stays true."""
    monkeypatch.setattr(handles, "REOPEN_AFTER_VERSIONS", 3)
    uri = str(tmp_path / "sink")
    sink = DeltaAppendSink(uri, app_id="app")
    assert sink(records(("t", 0, 0)), 0)
    first = sink.location.snapshot()
    for batch in range(1, 4):
        assert sink(records(("t", 0, batch)), batch)
    reopened = sink.location.snapshot()
    assert reopened is not first and reopened is not None and reopened.version() == 3
    assert not sink(records(("t", 0, 3)), 3)
    assert sink(records(("t", 0, 4)), 4)
    assert delta_rows(uri) == [("t", 0, o) for o in range(5)]


def test_claims_read_the_ledger_only_when_this_process_cannot_know_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """New offsets and redeliveries of the last batch claim without a read; another writer's
    claims made meanwhile are read, and never applied twice."""
    ledger, sink = str(tmp_path / "ledger"), str(tmp_path / "sink")
    a = CheckpointDedupStore(ledger, DeltaAppendSink(sink, app_id="a"), app_id="a")
    b = CheckpointDedupStore(ledger, DeltaAppendSink(sink, app_id="b"), app_id="b")
    reads: list[str | None] = []
    read = IdentityLedger.read

    def counted(self: IdentityLedger, *args: object, **kwargs: object) -> object:
        reads.append(self.app_id)
        return read(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(IdentityLedger, "read", counted)
    a.apply(partition_run("t", 0, 0, 10), 0)
    second = a.apply(partition_run("t", 0, 5, 15), 1)
    assert reads == []  # the ledger's log told the first batch; the second knew it
    assert (second.rows_written, second.already_applied) == (5, 5)

    b.apply(partition_run("t", 0, 15, 20), 0)
    reads.clear()
    third = a.apply(partition_run("t", 0, 15, 25), 2)
    # a's commit on its own last snapshot failed on b's claim; the retry read the ledger.
    assert reads == ["a"]
    assert (third.rows_written, third.already_applied) == (5, 5)
    assert delta_rows(sink) == [("t", 0, o) for o in range(25)]
