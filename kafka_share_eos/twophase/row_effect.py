"""A per-record SQL effect run inside the server: one round trip for a whole batch.

A Postgres participant's effect may be SQL run once per new record, its columns bound as
``:name`` parameters (``UPDATE accounts SET balance = balance + :amount WHERE id = :account``).
Sent one statement per record, a batch costs a round trip and a set of Python parameters per
record, several times the cost of the write it guards. Instead, the columns the statement names
go to the server as arrays (:func:`~kafka_share_eos.sinks.sql_values.postgres_array`) inside one
anonymous PL/pgSQL block, which runs the statement once per record, in batch order, with each
``:name`` standing for that record's value: the same statements in the same order and the same
transaction, planned once.

Statements that return rows (a ``SELECT``, ``RETURNING``), hold several statements, or name a
column with no array literal keep the one-by-one path.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pyarrow as pa

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.sinks.sql_values import postgres_array

# SQLAlchemy's rule for the parameters of text(): ``:name``, not ``::`` nor ``\:``.
_PARAMETER = re.compile(r"(?<![:\w\\]):(\w+)(?!:)")
_WRITES = ("insert", "update", "delete")


def _literal(text: str) -> str:
    """``text`` as a standard SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


def server_loop(sql: str, rows: pa.Table, sql_type: Callable[[pa.Field], str]) -> str | None:
    """A ``DO`` block running ``sql`` once per row of ``rows``, or None when it cannot.

    Args:
        sql: the per-record statement, with ``:column`` parameters.
        rows: the records, in the order the statement must run for them.
        sql_type: the PostgreSQL type of an Arrow field (its column's array type is used).
    """
    words = sql.split(None, 1)
    statement = sql.strip().rstrip(";").strip()
    if (not words or words[0].lower() not in _WRITES or ";" in statement
            or re.search(r"\breturning\b", statement, re.IGNORECASE)):
        return None
    names = list(dict.fromkeys(_PARAMETER.findall(statement)))
    if not names or not set(names) <= set(rows.column_names):
        return None  # run one by one: the driver reports what is wrong
    try:
        arrays = [postgres_array(rows[name]) for name in names]
    except ConfigurationError:
        return None
    alias = {name: f"kse_c{i}" for i, name in enumerate(names)}
    body = _PARAMETER.sub(lambda m: f"r.{alias[m.group(1)]}", statement).replace("\\:", ":")
    columns = ", ".join(
        f"CAST({_literal(array)} AS {sql_type(rows.schema.field(name))}[])"
        for name, array in zip(names, arrays, strict=True)
    )
    block = (
        "DECLARE r record; BEGIN"
        f" FOR r IN SELECT * FROM unnest({columns}) WITH ORDINALITY"
        f" AS r({', '.join(alias.values())}, kse_n) ORDER BY kse_n"
        f" LOOP {body}; END LOOP; END"
    )
    return "DO " + _literal(block)
