"""A batch's keys as a pyiceberg row filter matching a superset of them, and the stored rows
of exactly those keys.

The superset lets Iceberg skip every data file whose key statistics cannot match (the record
identity's offsets come in runs, one range per run: :mod:`.key_ranges`), so a batch of new
records reads nothing but manifests. It is ranges and bounds, never a list of every key:
pyiceberg binds a listed value as an object of its own, again for each file it evaluates,
which for a batch of 20 000 keys costs more than reading the key column of a million rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from kafka_share_eos._libs import iceberg_expressions
from kafka_share_eos.sinks.key_ranges import key_ranges, range_column

if TYPE_CHECKING:
    from pyiceberg.expressions import BooleanExpression
    from pyiceberg.table import Table

# Type checkers see pydantic's keyword constructors of pyiceberg's predicates, not the
# positional ones pyiceberg defines (``EqualTo("offset", 3)``).
ie: Any = iceberg_expressions

MAX_LISTED = 1000
"""Distinct values of a non-integer key column listed in a superset filter; more match all."""


def _all(terms: Sequence[BooleanExpression]) -> BooleanExpression:
    """The terms and-ed (none: always true)."""
    expression: BooleanExpression = reduce(ie.And, terms) if terms else ie.AlwaysTrue()
    return expression


def _any(terms: Sequence[BooleanExpression]) -> BooleanExpression:
    """The terms or-ed (none: always false)."""
    expression: BooleanExpression = reduce(ie.Or, terms) if terms else ie.AlwaysFalse()
    return expression


def _column_bounds(keys: pa.Table, name: str) -> BooleanExpression:
    column = keys.column(name)
    if pa.types.is_integer(column.type):
        bounds = pc.min_max(column)
        return _all([ie.GreaterThanOrEqual(name, bounds["min"].as_py()),
                     ie.LessThanOrEqual(name, bounds["max"].as_py())])
    values = pc.unique(column).to_pylist()
    return _all([ie.In(name, values)] if len(values) <= MAX_LISTED else [])


def covering(keys: pa.Table) -> BooleanExpression:
    """A filter matching every row whose key is among ``keys`` (unique, null-free), and
    perhaps others: ranges of the last key column when it is an integer in runs, else each
    column's bounds or values."""
    if keys.num_rows == 0:
        return _any([])
    column = range_column(keys.schema)
    ranges = None if column is None else key_ranges(keys, column)
    if ranges is None:
        return _all([_column_bounds(keys, name) for name in keys.column_names])
    fixed = [name for name in keys.column_names if name != column]
    return _any([
        _all([*(ie.EqualTo(name, value) for name, value in zip(fixed, run.fixed, strict=True)),
              ie.GreaterThanOrEqual(column, run.low), ie.LessThanOrEqual(column, run.high)])
        for run in ranges
    ])


def stored_keys(
    table: Table,
    rows: pa.Table,
    keys: Sequence[str],
    columns: Sequence[str] | None = None,
) -> pa.Table:
    """The ``columns`` (default: the ``keys``) of the table's rows whose key is among
    ``rows``' keys, typed as in ``rows``."""
    wanted = list(columns if columns is not None else keys)
    present = rows.select(list(keys)).filter(
        reduce(pc.and_, [pc.is_valid(rows.column(name)) for name in keys])
    )
    if present.num_rows == 0 or table.current_snapshot() is None:
        return rows.select(wanted).slice(0, 0)
    scan = table.scan(row_filter=covering(present), selected_fields=tuple(wanted))
    stored = scan.to_arrow().select(wanted).cast(rows.select(wanted).schema)
    # The filter is a superset, a whole file's keys when the batch's are not in runs: only
    # the batch's own keys go on, in a join whose hash table is built on the batch's side.
    return stored.join(present, keys=list(keys), join_type="left semi").select(wanted)
