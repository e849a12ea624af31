"""The Delta participant's staging area on a local disk: staged files that a manifest names before
they are written, add actions whose statistics describe them, manifests read back without their
format field and refused in a later format, and discards that delete exactly what was not
committed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafka_share_eos.errors import UnsupportedFormatError
from kafka_share_eos.storage import open_location
from kafka_share_eos.twophase.delta_staging import STAGING_DIR, StagingArea, action_rows

TXID = "kse:pay:3:0a1b2c"


def area(root: Path) -> StagingArea:
    return StagingArea(*open_location(str(root)))


def manifest() -> dict[str, object]:
    return {"participant": "delta", "app_id": "pay", "version": 1, "snapshot": 0,
            "keys": ["partition", "offset"]}


def rows(first: int, count: int) -> pa.Table:
    return pa.table({
        "partition": pa.array([i % 2 for i in range(first, first + count)], pa.int32()),
        "offset": pa.array(range(first, first + count), pa.int64()),
        "note": pa.array([f"n{i}" for i in range(first, first + count)]),
        "score": pa.array([i / 2 for i in range(first, first + count)]),
    })


def test_a_staged_file_is_named_by_the_manifest_and_described_by_its_add_action(
    tmp_path: Path,
) -> None:
    staging = area(tmp_path)
    written = manifest()
    action = staging.stage(TXID, written, rows(4, 3))

    assert written["files"] == [action["path"]]
    assert staging.read(TXID) == written
    staged = tmp_path / str(action["path"])
    assert action["size"] == staged.stat().st_size
    assert pq.read_table(staged) == rows(4, 3)
    assert staging.rows([action]) == rows(4, 3)
    assert action_rows(action) == 3
    # Integers and strings have bounds; floats have none (NaN has no JSON form).
    assert json.loads(action["stats"]) == {
        "numRecords": 3,
        "minValues": {"partition": 0, "offset": 4, "note": "n4"},
        "maxValues": {"partition": 1, "offset": 6, "note": "n6"},
        "nullCount": {"partition": 0, "offset": 0, "note": 0},
    }


def test_a_column_of_nulls_counts_its_nulls_and_has_no_bounds(tmp_path: Path) -> None:
    staged = pa.table({"offset": pa.array([None, None], pa.int64()),
                       "note": pa.array(["a", None])})
    action = area(tmp_path).stage(TXID, manifest(), staged)

    stats = json.loads(action["stats"])
    assert stats["nullCount"] == {"offset": 2, "note": 1}
    assert stats["minValues"] == {"note": "a"} and stats["maxValues"] == {"note": "a"}


def test_every_file_staged_for_a_transaction_is_listed_and_read_back(tmp_path: Path) -> None:
    staging = area(tmp_path)
    written = manifest()
    actions = [staging.stage(TXID, written, rows(0, 2)), staging.stage(TXID, written, rows(2, 3))]

    stored = staging.read(TXID)
    assert stored is not None and stored["files"] == [a["path"] for a in actions]
    assert staging.rows(actions) == pa.concat_tables([rows(0, 2), rows(2, 3)])


def test_manifests_are_stored_with_their_format_and_listed_by_prefix(tmp_path: Path) -> None:
    staging = area(tmp_path)
    for txid in ("kse:pay:10:b", "kse:pay:9:a", "kse:payroll:1:c"):
        staging.write(txid, manifest())
    (tmp_path / STAGING_DIR / "notes.txt").write_text("not a manifest")

    stored = json.loads((tmp_path / STAGING_DIR / "kse=pay=9=a.json").read_text())
    assert stored == {"format": 1, **manifest()}
    assert staging.read("kse:pay:9:a") == manifest()
    assert staging.txids("kse:pay:") == ["kse:pay:10:b", "kse:pay:9:a"]
    assert staging.holds("kse:pay:9:a") and not staging.holds("kse:pay:8:a")
    assert staging.read("kse:pay:8:a") is None
    assert area(tmp_path / "elsewhere").txids("kse:") == []


def test_a_manifest_of_a_later_format_is_refused(tmp_path: Path) -> None:
    staging = area(tmp_path)
    staging.write(TXID, manifest())
    path = tmp_path / STAGING_DIR / "kse=pay=3=0a1b2c.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), "format": 2}))

    with pytest.raises(UnsupportedFormatError, match=r"Delta staging manifest at .*format '2'"):
        staging.read(TXID)


def test_a_discard_deletes_the_uncommitted_files_then_the_manifest(tmp_path: Path) -> None:
    staging = area(tmp_path)
    written = manifest()
    committed = staging.stage(TXID, written, rows(0, 2))["path"]
    left_out = staging.stage(TXID, written, rows(2, 2))["path"]

    staging.discard(TXID, keep=frozenset({committed}))

    assert (tmp_path / committed).exists() and not (tmp_path / left_out).exists()
    assert not staging.holds(TXID) and staging.txids("kse:") == []
    # Finished: a second discard (an abort after the commit) deletes nothing.
    staging.discard(TXID)
    assert (tmp_path / committed).exists()
