"""The identity ledger on real Delta tables: lookups, claims and the batch marker."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from helpers.ledgers import delta_rows, filled_ledger, partition_run, records

from kafka_share_eos.errors import AppIdConflictError
from kafka_share_eos.ledger.identity_ledger import IdentityLedger

pytestmark = pytest.mark.timeout(120)


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
