"""How a database error is told apart: a row the target refuses or a database that failed, read
from the SQLSTATE through every wrapper around it."""

from __future__ import annotations

import psycopg
import psycopg.errors as pg
import pytest
import sqlalchemy as sa

from kafka_share_eos.sinks import TargetTableError
from kafka_share_eos.sinks.sql_refusals import refused_row

pytestmark = pytest.mark.timeout(120)


def test_the_classifier_reads_sqlstate_through_every_wrapper() -> None:
    def chained(outer: Exception, inner: BaseException) -> Exception:
        outer.__cause__ = inner
        return outer

    unique = pg.UniqueViolation("duplicate key")
    assert refused_row(unique)
    assert refused_row(pg.StringDataRightTruncation("value too long"))
    assert refused_row(sa.exc.DBAPIError.instance("COPY", None, unique, psycopg.Error))
    assert refused_row(chained(TargetTableError("batch 5 violates"), chained(
        sa.exc.IntegrityError("INSERT", None, unique), unique)))
    for infrastructure in (pg.AdminShutdown("terminating"), pg.QueryCanceled("timeout"),
                           pg.DiskFull("disk full"), pg.SerializationFailure("retry"),
                           pg.ConnectionException("lost")):
        assert not refused_row(infrastructure)
        assert not refused_row(sa.exc.DBAPIError.instance("COPY", None, infrastructure,
                                                         psycopg.Error))
    # A data error's class does not matter when its SQLSTATE says otherwise.
    assert not refused_row(sa.exc.IntegrityError("INSERT", None, pg.QueryCanceled("x")))
    assert not refused_row(ConnectionError("reset"))
    assert not refused_row(ValueError("not about a database"))
