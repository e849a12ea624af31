"""Stored rows replaced copy-on-write in one snapshot: the data files holding a replaced key
rewritten without it, and the batch's rows added, in a single overwrite.

pyiceberg's own ``overwrite(rows, overwrite_filter)`` deletes by a row filter listing every
replaced key, which it binds again for each file and manifest it evaluates (a few
milliseconds per thousand keys, each time), reads the matching files through that filter,
and commits a delete, a rewrite and an append as two or three snapshots. Here the files are
found by the keys' ranges or bounds (:func:`~kafka_share_eos.sinks.iceberg_keys.covering`),
the replaced rows are dropped from each by a join on the key columns, and one snapshot
carries every change.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos._libs import iceberg_expressions
from kafka_share_eos.sinks.iceberg_keys import covering

if TYPE_CHECKING:
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import FileScanTask, Table, Transaction

_ROW = "__kse_row"


def kept_rows(stored: pa.Table, replaced: pa.Table) -> pa.Table | None:
    """``stored`` without the rows whose key is among ``replaced``' (its key columns, null-free);
    None when it holds none of them. A stored row with a null key is never replaced."""
    keys = replaced.column_names
    replaced = replaced.cast(stored.select(keys).schema)
    if len(keys) == 1:
        # Nulls are never in the set, so a null key reads as not replaced.
        held = pc.is_in(stored.column(keys[0]), value_set=replaced.column(0).combine_chunks())
    else:
        numbered = stored.select(keys).append_column(
            _ROW, pc.subtract(pc.cumulative_sum(pa.repeat(1, stored.num_rows)), 1))
        matched = numbered.join(replaced, keys=keys, join_type="left semi")[_ROW]
        held = pc.is_in(numbered[_ROW], value_set=matched.combine_chunks())
    if not pc.any(held).as_py():
        return None
    return stored.filter(pc.invert(held))


def _rewrites(table: Table, replaced: pa.Table) -> list[tuple[DataFile, pa.Table]]:
    """Each data file that may hold a replaced key (by its statistics), with its rows but
    those keys' when it holds any."""
    from pyiceberg.io.pyarrow import ArrowScan

    tasks: list[FileScanTask] = list(table.scan(row_filter=covering(replaced)).plan_files())
    reader = ArrowScan(table.metadata, table.io, table.schema(),
                       iceberg_expressions.AlwaysTrue())
    found = []
    for task in tasks:
        # The whole file, its position deletes applied: what stays is written anew.
        kept = kept_rows(reader.to_table([task]), replaced)
        if kept is not None:
            found.append((task.file, kept))
    return found


def replace_rows(
    transaction: Transaction,
    table: Table,
    rows: pa.Table,
    replaced: pa.Table,
    properties: Mapping[str, str],
) -> None:
    """Stage in ``transaction`` one snapshot that rewrites every data file of ``table`` holding
    a key of ``replaced`` (its key columns, unique and null-free) without those rows, and adds
    ``rows`` (typed as the table stores them)."""
    from pyiceberg.io.pyarrow import _dataframe_to_data_files

    rewrites = _rewrites(table, replaced)
    commit_uuid, counter = uuid.uuid4(), itertools.count(0)

    def written(data: pa.Table) -> Sequence[DataFile]:
        if data.num_rows == 0:
            return []
        return list(_dataframe_to_data_files(table_metadata=transaction.table_metadata,
                                             df=data, io=table.io, write_uuid=commit_uuid,
                                             counter=counter))

    with transaction.update_snapshot(snapshot_properties=dict(properties)).overwrite(
            commit_uuid) as snapshot:
        for old, kept in rewrites:
            snapshot.delete_data_file(old)
            for new in written(kept):
                snapshot.append_data_file(new)
        for new in written(rows):
            snapshot.append_data_file(new)
