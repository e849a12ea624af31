"""Reading Delta tables back in tests."""

from __future__ import annotations

import pyarrow as pa
from deltalake import DeltaTable, QueryBuilder


def read_delta(path: str, sql: str = "SELECT * FROM t") -> pa.Table:
    """The result of ``sql`` over the Delta table at ``path``, registered as ``t``.

    QueryBuilder rather than ``to_pyarrow_table()``: in a process that also wrote Delta, the
    latter can abort the interpreter at exit.
    """
    return pa.table(QueryBuilder().register("t", DeltaTable(path)).execute(sql))
