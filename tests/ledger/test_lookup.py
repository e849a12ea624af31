"""Reading an identity ledger on real Delta tables: which rows of a batch are new, the predicate
that selects the ledger rows a batch can match (record coordinates or business keys), the last
batch an application claimed, and opening a ledger that exists by its schema."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake
from helpers.ledgers import filled_ledger, partition_run, records

from kafka_share_eos.errors import ConfigurationError, LocationNotFoundError
from kafka_share_eos.ledger.identity_ledger import IdentityLedger
from kafka_share_eos.ledger.lookup import LedgerLookup
from kafka_share_eos.ledger.rows import RECORD_IDENTITY

pytestmark = pytest.mark.timeout(120)


def orders(*ids: int) -> pa.Table:
    return pa.table({"order_id": pa.array(ids, pa.int64()),
                     "amount": pa.array([10 * i for i in ids], pa.int64())})


def test_new_rows_are_those_the_ledger_lacks_in_their_order(tmp_path: Path) -> None:
    filled_ledger(tmp_path / "ledger", batches=2)  # offsets 0-19 of t/0 and t/1
    lookup = LedgerLookup(str(tmp_path / "ledger"))
    batch = records(("t", 1, 25), ("t", 0, 3), ("u", 0, 3), ("t", 0, 20), ("t", 1, 19))
    new = lookup.new_rows(batch)
    assert list(zip(new["topic"].to_pylist(), new["offset"].to_pylist(), strict=True)) == [
        ("t", 25), ("u", 3), ("t", 20)]
    assert new.column_names == batch.column_names
    assert lookup.new_rows(partition_run("t", 0, 0, 20)).num_rows == 0
    empty = batch.slice(0, 0)
    assert lookup.new_rows(empty) is empty


def test_every_row_is_new_while_the_ledger_table_is_absent(tmp_path: Path) -> None:
    lookup = LedgerLookup(str(tmp_path / "absent"))
    batch = partition_run("t", 0, 0, 5)
    assert lookup.new_rows(batch) is batch
    assert lookup.read(RECORD_IDENTITY) is None
    assert lookup.last_batch() is None
    assert not (tmp_path / "absent").exists()


def test_new_rows_among_keeps_what_the_rows_seen_lack(tmp_path: Path) -> None:
    lookup = LedgerLookup(str(tmp_path / "ledger"))
    batch = partition_run("t", 0, 0, 4)
    seen = partition_run("t", 0, 1, 3).select(list(RECORD_IDENTITY))
    assert lookup.new_rows_among(batch, seen)["offset"].to_pylist() == [0, 3]
    assert lookup.new_rows_among(batch, seen.slice(0, 0)) is batch


def test_the_record_predicate_names_each_partitions_offset_ranges(tmp_path: Path) -> None:
    lookup = LedgerLookup(str(tmp_path / "ledger"))
    batch = records(("t", 0, 5), ("t", 0, 7), ("t", 0, 5000), ("it's", 2, 1))
    assert lookup.lookup_predicate(batch) == (
        '("topic" = \'it\'\'s\' AND "partition" = 2 AND "offset" BETWEEN 1 AND 1) OR '
        '("topic" = \'t\' AND "partition" = 0 AND "offset" BETWEEN 5 AND 7) OR '
        '("topic" = \'t\' AND "partition" = 0 AND "offset" BETWEEN 5000 AND 5000)'
    )


def test_the_business_key_predicate_bounds_the_first_key_column(tmp_path: Path) -> None:
    by_id = LedgerLookup(str(tmp_path / "ids"), identity=["order_id", "amount"])
    assert by_id.lookup_predicate(orders(7, 3, 12)) == '"order_id" BETWEEN 3 AND 12'
    by_name = LedgerLookup(str(tmp_path / "names"), identity=["customer"])
    assert by_name.lookup_predicate(pa.table({"customer": ["o'hara", "adams"]})) == (
        "\"customer\" BETWEEN 'adams' AND 'o''hara'")
    # No range for other types: every file is read.
    by_price = LedgerLookup(str(tmp_path / "prices"), identity=["price"])
    assert by_price.lookup_predicate(pa.table({"price": [1.5, 2.5]})) is None
    assert by_price.lookup_predicate(pa.table({"price": pa.array([None], pa.int64())})) is None


def test_business_key_lookups_find_what_was_claimed(tmp_path: Path) -> None:
    uri = str(tmp_path / "ledger")
    assert IdentityLedger(uri, identity=["order_id"]).claim(orders(1, 2, 3), 0).claimed_now == 3
    lookup = LedgerLookup(uri, identity=["order_id"])
    assert lookup.new_rows(orders(3, 4, 1, 5))["order_id"].to_pylist() == [4, 5]
    assert lookup.last_batch() == 0
    assert lookup.read(["order_id"], '"order_id" >= 2')["order_id"].to_pylist() == [2, 3]


def test_the_last_batch_is_the_applications_own(tmp_path: Path) -> None:
    uri = str(tmp_path / "ledger")
    IdentityLedger(uri, app_id="app-a").claim(partition_run("t", 0, 0, 5), 4)
    IdentityLedger(uri, app_id="app-b").claim(partition_run("t", 0, 5, 10), 9)
    assert LedgerLookup(uri, app_id="app-a").last_batch() == 4
    assert LedgerLookup(uri, app_id="app-b").last_batch() == 9
    assert LedgerLookup(uri, app_id="app-c").last_batch() is None


def test_the_layout_follows_the_identity(tmp_path: Path) -> None:
    record = LedgerLookup(str(tmp_path / "a"))
    assert record.is_record_identity and record.partition_by == ["topic", "partition"]
    claims = record.known_claims()
    assert claims is not None and record.known_claims() is claims
    keyed = LedgerLookup(str(tmp_path / "b"), identity=["order_id"])
    assert not keyed.is_record_identity and keyed.partition_by == []
    assert keyed.known_claims() is None
    assert keyed.uri == str(tmp_path / "b")


def test_an_identity_must_name_columns_of_its_own(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="at least one column"):
        LedgerLookup(str(tmp_path), identity=[])
    with pytest.raises(ConfigurationError, match="'_batch_id' is reserved by the ledger"):
        LedgerLookup(str(tmp_path), identity=["order_id", "_batch_id"])


def test_an_existing_ledger_is_opened_with_the_identity_of_its_table(tmp_path: Path) -> None:
    uri = str(tmp_path / "ledger")
    IdentityLedger(uri, identity=["tenant", "order_id"], app_id="app-a").claim(
        pa.table({"tenant": ["x", "y"], "order_id": [1, 2]}), 3)
    opened = LedgerLookup.existing(uri, app_id="app-a")
    assert opened.identity == ("tenant", "order_id")
    assert opened.last_batch() == 3
    assert opened.new_rows(pa.table({"tenant": ["x", "x"], "order_id": [1, 2]}))[
        "order_id"].to_pylist() == [2]
    assert LedgerLookup.existing(str(filled_ledger(tmp_path / "records", 1).uri)).identity == (
        RECORD_IDENTITY)


def test_opening_an_existing_ledger_refuses_what_is_none(tmp_path: Path) -> None:
    with pytest.raises(LocationNotFoundError, match="no Delta ledger table at"):
        LedgerLookup.existing(str(tmp_path / "absent"))
    (tmp_path / "notes.txt").write_text("not a table")
    with pytest.raises(LocationNotFoundError, match=r"no Delta ledger table at .*: it is a file"):
        LedgerLookup.existing(str(tmp_path / "notes.txt"))
    write_deltalake(str(tmp_path / "orders"), orders(1))
    with pytest.raises(ConfigurationError,
                       match=r"is not an identity ledger: it lacks '_batch_id' and '_applied_at' "
                             r"\(columns: \['order_id', 'amount'\]\)"):
        LedgerLookup.existing(str(tmp_path / "orders"))
