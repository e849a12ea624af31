"""The Iceberg participant's files carry no Parquet field ids, at any depth: readers map their
columns by the table's name mapping. Iceberg's Java readers (Spark's) go by a file's ids as soon
as one column has one, so a file with the table's ids on its cast columns only would read as
nulls in the others there (Spark's own read is in tests/end_to_end/test_iceberg_spark_reads.py)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers.batches import source_rows
from helpers.iceberg import catalog_config, load

from kafka_share_eos import IcebergParticipant, TwoPhaseCommitCoordinator

pytestmark = pytest.mark.timeout(120)


def field_ids(field: pa.Field) -> list[str]:
    """The names of ``field`` and of the fields nested in it that carry metadata."""
    found = [field.name] if field.metadata else []
    kind = field.type
    if isinstance(kind, pa.StructType):
        nested = [kind.field(i) for i in range(kind.num_fields)]
    elif isinstance(kind, pa.MapType):
        nested = [kind.key_field, kind.item_field]
    elif isinstance(kind, pa.ListType | pa.LargeListType):
        nested = [kind.value_field]
    else:
        nested = []
    return found + [name for child in nested for name in field_ids(child)]


def test_committed_files_carry_no_field_id_and_read_back_whole(
    request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    config = catalog_config(request, tmp_path, "sqlite")
    coordinator = TwoPhaseCommitCoordinator(
        str(tmp_path / "decisions"), [IcebergParticipant("db.p", catalog=config)], app_id="app")

    def batch(offsets: range) -> pa.Table:
        # Strings and binaries are cast to the table's large types; the rest are not.
        return source_rows(
            topic="t", partition=0, offset=offsets,
            value=pa.array([b"v%d" % o for o in offsets], pa.binary()),
            tags=pa.array([[str(o)] for o in offsets], pa.list_(pa.string())),
            attrs=pa.array([[("k", o)] for o in offsets], pa.map_(pa.string(), pa.int64())),
            point=pa.array([{"label": str(o)} for o in offsets],
                           pa.struct([("label", pa.string())])),
        )

    coordinator.apply(batch(range(0, 10)), 0)
    coordinator.apply(batch(range(5, 20)), 1)

    table = load(config, "db.p")
    files = [task.file.file_path.removeprefix("file://") for task in table.scan().plan_files()]
    assert len(files) == 2
    for path in files:
        assert [name for field in pq.read_schema(path) for name in field_ids(field)] == []
    rows = sorted(table.scan().to_arrow().to_pylist(), key=lambda row: row["offset"])
    assert [row["offset"] for row in rows] == list(range(20))
    assert rows[19] == {"topic": "t", "partition": 0, "offset": 19, "value": b"v19",
                        "tags": ["19"], "attrs": [("k", 19)], "point": {"label": "19"}}
