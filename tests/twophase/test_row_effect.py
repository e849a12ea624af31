"""A per-record SQL effect runs inside the server, once per new record and in batch order, with
the same values and errors as statements sent one by one."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.accounts import prepared_gids
from helpers.batches import source_rows

from kafka_share_eos import PostgresParticipant, TwoPhaseCommitCoordinator
from kafka_share_eos.twophase.row_effect import server_loop

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(120)]

NOTES = ["plain", "it's", 'say "hi"', "back\\slash", "{a,b}", "", None, "NULL", "ünï cødé"]


def notes(first_offset: int, values: list[str | None]) -> pa.Table:
    n = len(values)
    return source_rows(
        topic="t", partition=0, offset=range(first_offset, first_offset + n),
        account=pa.array([i % 3 for i in range(n)], pa.int32()),
        note=pa.array(values, pa.string()),
    )


def coordinator(url: str, tmp_path: Path, effect: str) -> TwoPhaseCommitCoordinator:
    return TwoPhaseCommitCoordinator(
        log=str(tmp_path / "decisions"),
        participants=[PostgresParticipant(url, effect, name="log")],
        app_id="row-effect",
    )


def logged(url: str) -> list[tuple[int, str | None]]:
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT account, note FROM effect_log ORDER BY id")).all()
    engine.dispose()
    return [(int(r[0]), r[1]) for r in rows]


def create_log(url: str) -> None:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "CREATE TABLE effect_log (id bigserial PRIMARY KEY, account int NOT NULL"
            " CHECK (account < 10), note text)"
        ))
    engine.dispose()


def test_each_new_record_runs_the_statement_once_in_batch_order(
    postgres_url: str, tmp_path: Path
) -> None:
    create_log(postgres_url)
    strategy = coordinator(
        postgres_url, tmp_path, "INSERT INTO effect_log (account, note) VALUES (:account, :note)"
    )
    first = notes(0, NOTES)
    strategy.apply(first, 0)
    # Records 5-8 come back next to new ones: only the new ones run the statement.
    again = pa.concat_tables([first.slice(5), notes(len(NOTES), ["later", "last"])])
    report = strategy.apply(again, 1)
    assert (report.already_applied, report.rows_written) == (4, 2)
    assert logged(postgres_url) == [
        *((i % 3, note) for i, note in enumerate(NOTES)), (0, "later"), (1, "last")
    ]


def test_a_statement_returning_rows_runs_one_by_one(postgres_url: str, tmp_path: Path) -> None:
    create_log(postgres_url)
    statement = "INSERT INTO effect_log (account, note) VALUES (:account, :note) RETURNING id"
    batch = notes(0, ["a", "b"])
    assert server_loop(statement, batch, lambda _: "text") is None
    coordinator(postgres_url, tmp_path, statement).apply(batch, 0)
    assert logged(postgres_url) == [(0, "a"), (1, "b")]


def test_a_record_the_statement_refuses_fails_the_batch_and_prepares_nothing(
    postgres_url: str, tmp_path: Path
) -> None:
    create_log(postgres_url)
    strategy = coordinator(
        postgres_url, tmp_path, "INSERT INTO effect_log (account, note) VALUES (:account, :note)"
    )
    refused = notes(0, ["ok", "too big"]).set_column(
        3, "account", pa.array([1, 11], pa.int32())
    )
    with pytest.raises(sa.exc.IntegrityError, match="effect_log_account_check"):
        strategy.apply(refused, 0)
    assert prepared_gids(postgres_url) == []
    assert logged(postgres_url) == []


def test_statements_the_server_cannot_loop_over_are_left_to_the_driver() -> None:
    batch = notes(0, ["x"]).append_column("raw", pa.array([b"\x00"], pa.binary()))
    always_text = lambda _: "text"  # noqa: E731
    assert server_loop("SELECT :note", batch, always_text) is None
    assert server_loop("UPDATE a SET n = :note; DELETE FROM b", batch, always_text) is None
    assert server_loop("UPDATE a SET n = :missing", batch, always_text) is None
    assert server_loop("UPDATE a SET n = :raw", batch, always_text) is None
    looped = server_loop("UPDATE a SET n = :note WHERE id = :account;", batch, lambda _: "text")
    assert looped is not None and "r.kse_c0" in looped and "r.kse_c1" in looped
