"""SQL text for the predicates delta-rs evaluates (DataFusion's dialect): quoted column names
and literals."""

from __future__ import annotations


def quote_identifier(name: str) -> str:
    """Quote a column name for a delta-rs (DataFusion) SQL predicate."""
    return '"' + name.replace('"', '""') + '"'


def sql_literal(value: str | int) -> str:
    """``value`` as a SQL literal for delta-rs predicates.

    Raises:
        TypeError: ``value`` is neither a string nor an integer.
    """
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise TypeError(f"no SQL literal for {value!r}")
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("'", "''") + "'"
