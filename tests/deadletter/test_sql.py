"""Dead letters in a SQLite and a PostgreSQL table: every column reads back as written (times in
UTC on SQLite too), a letter already there is not added again, a sink that must not create
its table refuses a missing one without creating anything, and a pickled copy writes on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from helpers.pickled import copied
from helpers.unit2_letters import by_id, rejected, uncoordinated

from kafka_share_eos.deadletter import DEAD_LETTER_SCHEMA, SqlDeadLetters
from kafka_share_eos.errors import LocationNotFoundError

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A SQLite file's URL, or a fresh PostgreSQL database's."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'letters.db'}"
    else:
        yield request.getfixturevalue("postgres_url")


def test_letters_read_back_as_written_and_a_repeat_is_not_added(database_url: str) -> None:
    sink = SqlDeadLetters(database_url)
    first, content = rejected(4), uncoordinated([3, 4])
    later = rejected(3, first_offset=2, batch_id=1)  # one new letter beside two known ones

    for letters in (first, content, first, later, first.slice(0, 0)):
        sink.write(letters)

    read = sink.read()
    assert read.schema == DEAD_LETTER_SCHEMA
    assert by_id(read) == by_id(pa.concat_tables([first, content, later.slice(2, 1)]))
    assert sink.count() == 7
    sink.close()


def test_a_write_returns_how_many_letters_were_new(database_url: str) -> None:
    sink = SqlDeadLetters(database_url)

    written = [sink.write(letters) for letters in (
        rejected(4), rejected(4), rejected(3, first_offset=2), rejected(0))]
    sink.close()
    assert written == [4, 0, 1, 0]


def test_a_sink_opened_without_creating_finds_the_letters_another_one_wrote(
    database_url: str,
) -> None:
    SqlDeadLetters(database_url, "other").close()  # the database exists, the table not
    with pytest.raises(LocationNotFoundError, match="no dead-letter table 'letters'"):
        SqlDeadLetters(database_url, "letters", create_table=False)
    writer, written = SqlDeadLetters(database_url, "letters"), rejected(2)
    writer.write(written)

    reader = SqlDeadLetters(database_url, "letters", create_table=False)

    assert by_id(reader.read()) == by_id(written)
    assert reader.target == f"{sa.make_url(database_url).get_backend_name()}:letters"
    writer.close()
    reader.close()


def test_a_missing_sqlite_file_is_refused_and_not_created(tmp_path: Path) -> None:
    database = tmp_path / "absent.db"

    with pytest.raises(LocationNotFoundError, match="no SQLite database at"):
        SqlDeadLetters(f"sqlite:///{database}", create_table=False)
    assert not database.exists()


def test_letters_go_to_the_named_postgresql_schema(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE SCHEMA quarantine")
    sink = SqlDeadLetters(engine, "letters", db_schema="quarantine")

    sink.write(rejected(3))
    sink.close()  # the engine is the caller's: it stays usable

    with engine.connect() as conn:
        stored = conn.exec_driver_sql(
            'SELECT letter_id, "offset" FROM quarantine.letters ORDER BY "offset"').all()
    engine.dispose()
    assert sink.target == "postgresql:quarantine.letters"
    assert [tuple(row) for row in stored] == [("orders/0/0", 0), ("orders/0/1", 1),
                                              ("orders/0/2", 2)]


def test_a_copy_made_before_or_after_writing_keeps_to_the_same_table(database_url: str) -> None:
    """A pickled copy (a Spark Connect server's) connects from the URL by itself."""
    sink = SqlDeadLetters(database_url)
    unused = copied(sink)
    sink.write(rejected(2))
    copy = copied(sink)

    assert copy.write(rejected(3)) == 1
    assert unused.write(rejected(4)) == 1
    assert sink.count() == copy.count() == 4
    for each in (sink, copy, unused):
        each.close()
