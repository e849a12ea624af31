"""How a database error is told apart: a row the target refuses, or a database that failed.

The sinks' own error classes live with every other in :mod:`kafka_share_eos.errors`."""

from __future__ import annotations

from collections.abc import Iterator

# SQLSTATE classes (first two characters) for values the database refuses: 22 data exception
# (too long, out of range, text that does not cast), 23 integrity constraint violation
# (NOT NULL, foreign key, unique, CHECK, exclusion). Any other SQLSTATE is not the rows' fault.
_ROW_SQLSTATE_CLASSES = frozenset({"22", "23"})
# The database or the way to it failed; retrying the batch later can succeed: 08 connection
# exception, 40 transaction rollback (serialization failure, deadlock), 53 insufficient
# resources, 57 operator intervention (cancel, statement timeout, shutdown), 58 system error.
_UNAVAILABLE_SQLSTATE_CLASSES = frozenset({"08", "40", "53", "57", "58"})
# PEP 249 class names, for errors without a SQLSTATE (SQLite, psycopg's client-side errors):
# every driver uses them, so no driver needs importing to recognise its errors.
_ROW_CLASS_NAMES = frozenset({"IntegrityError", "DataError"})
_UNAVAILABLE_CLASS_NAMES = frozenset({"OperationalError", "InterfaceError"})


def error_chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and everything it wraps: a SQLAlchemy error's DB-API error (``.orig``) first,
    then ``__cause__`` (or ``__context__``), and so on; each error once."""
    seen: set[int] = set()
    pending = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = (current.__cause__ or current.__context__, getattr(current, "orig", None))
        pending += [e for e in wrapped if isinstance(e, BaseException)]


def refused_row(error: BaseException) -> bool:
    """Whether the database refused the values of the rows written, rather than failing.

    Decided by the SQLSTATE class, 22 (data exception) or 23 (integrity constraint violation),
    whether psycopg raised the error (the COPY path) or SQLAlchemy wrapped it; without a
    SQLSTATE (SQLite, psycopg's client-side checks), by the DB-API class: ``IntegrityError`` or
    ``DataError``. Connection, timeout, resource and rollback errors are never the rows' fault.
    """
    return _verdict(error) == _ROW


def database_unavailable(error: BaseException) -> bool:
    """Whether the database, or the connection to it, failed (a connection lost, a timeout, a
    transaction the server rolled back, resources exhausted), so that a retry can succeed."""
    return _verdict(error) == _UNAVAILABLE


_ROW = "row"
_UNAVAILABLE = "unavailable"
_OTHER = "other"


def _verdict(error: BaseException) -> str | None:
    # The first database error of the chain decides: a failure while handling a refused row
    # (a connection lost during the rollback) is about the failure, not the row.
    for current in error_chain(error):
        verdict = _own_verdict(current)
        if verdict is not None:
            return verdict
    return None


def _own_verdict(error: BaseException) -> str | None:
    names = {cls.__name__ for cls in type(error).__mro__}
    code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
    if isinstance(code, str) and len(code) == 5:
        if code[:2] in _ROW_SQLSTATE_CLASSES:
            return _ROW
        if code[:2] in _UNAVAILABLE_SQLSTATE_CLASSES or not names.isdisjoint(
            _UNAVAILABLE_CLASS_NAMES
        ):
            return _UNAVAILABLE
        return _OTHER
    wrapped = getattr(error, "orig", None)
    if isinstance(wrapped, BaseException):
        # A SQLAlchemy wrapper: the DB-API error it wraps knows better than its class name.
        verdict = _own_verdict(wrapped)
        if verdict is not None:
            return verdict
    if not names.isdisjoint(_ROW_CLASS_NAMES):
        return _ROW
    if not names.isdisjoint(_UNAVAILABLE_CLASS_NAMES):
        return _UNAVAILABLE
    return None
