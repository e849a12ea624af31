"""A target that cannot work is refused in one line when the strategy is built, before the
query reads a record: a database that never answers, a missing table or SQLite file without
``create_table``, a path that is not a Delta table, a Kafka topic that does not exist. Each
refusal leaves the share group's records where they were: a consumer afterwards gets every one
of them, on its first delivery."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from confluent_kafka.admin import AdminClient
from helpers import consume, count_at_least, produce, share_consumer

from kafka_share_eos import (
    CheckpointDedupStore,
    DatabaseUnavailableError,
    DatabaseUnreachableError,
    DeltaAppendSink,
    DeltaDeadLetters,
    DeltaParticipant,
    EmbeddedBroker,
    FileDecisionLog,
    IdempotentUpsertSink,
    KafkaDeadLetters,
    KafkaTopicSink,
    PostgresDecisionLog,
    PostgresParticipant,
    SqlDeadLetters,
    TargetTableError,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.proving_ground.pytest_plugin import ShareTopic

pytestmark = pytest.mark.timeout(120)

RECORDS = 12


def closed_port(url: str) -> str:
    """``url`` on a port nothing listens on (1 is privileged, and no server binds it)."""
    return sa.make_url(url).set(port=1, password="hidden-pw").render_as_string(
        hide_password=False)


def records_waiting(topic: ShareTopic) -> list[bytes]:
    """Produce the records a pipeline would read; a refused strategy must leave them alone."""
    values = [b"r%d" % i for i in range(RECORDS)]
    produce(topic.bootstrap_servers, topic.topic, values, partitions=topic.partitions)
    return values


def assert_untouched(topic: ShareTopic, values: list[bytes]) -> None:
    """Every record is still available to the share group, delivered for the first time."""
    with share_consumer(topic.bootstrap_servers, topic.group_id, [topic.topic]) as consumer:
        got = consume(consumer, until=count_at_least(len(values)), timeout=60)
    assert sorted(d.value for d in got) == sorted(values)
    assert {d.delivery_count for d in got} == {1}


def assert_one_line(error: BaseException) -> str:
    message = str(error)
    assert "\n" not in message, message
    return message


@pytest.mark.postgres
def test_a_database_that_never_answers_is_refused_naming_it_before_any_record(
    postgres_url: str, share_topic: ShareTopic
) -> None:
    values = records_waiting(share_topic)
    url = closed_port(postgres_url)
    database = sa.make_url(postgres_url).database
    with pytest.raises(DatabaseUnreachableError) as refused:
        IdempotentUpsertSink.sql(url, "events", create_table=True)
    message = assert_one_line(refused.value)
    assert f"the database {database!r} at 127.0.0.1:1" in message
    assert "the connection never opened and no record was read or written" in message
    assert "Connection refused" in message
    assert "may or may not" not in message and "hidden-pw" not in message
    assert isinstance(refused.value, DatabaseUnavailableError | ConnectionError)
    assert_untouched(share_topic, values)


@pytest.mark.postgres
@pytest.mark.parametrize("build", [
    lambda url, tmp: TwoPhaseCommitCoordinator(
        FileDecisionLog(str(tmp / "log")), [PostgresParticipant(url, "SELECT 1")], app_id="a"),
    lambda url, tmp: TwoPhaseCommitCoordinator(PostgresDecisionLog(url),
                                               [DeltaParticipant(str(tmp / "t"))], app_id="a"),
    lambda url, tmp: IdempotentUpsertSink.delta(str(tmp / "t"), dead_letters=url),
    lambda url, tmp: SqlDeadLetters(url),
], ids=["participant", "decision-log", "dead-letters-of-a-strategy", "dead-letters"])
def test_every_postgres_target_that_never_answers_is_refused_when_built(
    build: Callable[[str, Path], object], postgres_url: str, tmp_path: Path
) -> None:
    with pytest.raises(DatabaseUnreachableError, match=r"at 127.0.0.1:1 .*never opened"
                       ) as refused:
        build(closed_port(postgres_url), tmp_path)
    assert_one_line(refused.value)


@pytest.mark.postgres
def test_a_postgres_table_without_a_unique_key_is_refused_when_built(postgres_url: str) -> None:
    engine = sa.create_engine(postgres_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE events (id bigint, v text)")
    engine.dispose()
    with pytest.raises(TargetTableError, match=r"'events' has no primary key.*\['id'\]"):
        IdempotentUpsertSink.sql(postgres_url, "events", key_columns=["id"])
    with pytest.raises(TargetTableError, match=r"'absent' does not exist.*create_table=True"):
        IdempotentUpsertSink.sql(postgres_url, "absent", key_columns=["id"])


def test_a_missing_sqlite_table_or_file_is_refused_and_nothing_is_created(
    share_topic: ShareTopic, tmp_path: Path
) -> None:
    values = records_waiting(share_topic)
    missing_file = tmp_path / "absent.db"
    with pytest.raises(TargetTableError, match=r"'events' does not exist: the SQLite database "
                       r"file .*absent.db' does not exist") as refused:
        IdempotentUpsertSink.sql(f"sqlite:///{missing_file}", "events")
    assert_one_line(refused.value)
    assert not missing_file.exists()

    existing = tmp_path / "shop.db"
    engine = sa.create_engine(f"sqlite:///{existing}")
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE other (id integer PRIMARY KEY)")
    engine.dispose()
    with pytest.raises(TargetTableError, match=r"'events' does not exist; create it .* or pass "
                       r"create_table=True") as refused:
        IdempotentUpsertSink.sql(f"sqlite:///{existing}", "events")
    assert_one_line(refused.value)
    with pytest.raises(TargetTableError, match=r"directory .*nowhere' does not exist"):
        IdempotentUpsertSink.sql(f"sqlite:///{tmp_path / 'nowhere' / 'x.db'}", "events",
                                 create_table=True)
    assert_untouched(share_topic, values)

    # With create_table the file and table are the sink's to make, at the first batch.
    sink = IdempotentUpsertSink.sql(f"sqlite:///{missing_file}", "events", create_table=True)
    assert not missing_file.exists()
    sink.close()


DELTA_BUILDS: dict[str, Callable[[str], object]] = {
    "upsert": lambda uri: IdempotentUpsertSink.delta(uri),
    "dedup-ledger": lambda uri: CheckpointDedupStore(uri, print),
    "dedup-sink": lambda uri: CheckpointDedupStore(uri + "-ledger", DeltaAppendSink(uri)),
    "participant": lambda uri: TwoPhaseCommitCoordinator(
        FileDecisionLog(uri + "-log"), [DeltaParticipant(uri)], app_id="a"),
    "dead-letters": lambda uri: IdempotentUpsertSink.sql(
        "sqlite://", "t", create_table=True, dead_letters=DeltaDeadLetters(uri)),
}


@pytest.mark.parametrize("build", list(DELTA_BUILDS))
def test_a_delta_path_holding_other_files_is_refused_and_left_as_it_was(
    build: str, share_topic: ShareTopic, tmp_path: Path
) -> None:
    values = records_waiting(share_topic)
    parquet_dir = tmp_path / "exported"
    parquet_dir.mkdir()
    (parquet_dir / "part-0.parquet").write_bytes(b"PAR1")
    with pytest.raises(TargetTableError, match=r"'.*exported' is not a Delta table \(no "
                       r"_delta_log\) but holds other files \(\['part-0.parquet'\]\)"
                       ) as refused:
        DELTA_BUILDS[build](str(parquet_dir))
    assert_one_line(refused.value)
    assert sorted(p.name for p in parquet_dir.iterdir()) == ["part-0.parquet"]

    a_file = tmp_path / "orders.csv"
    a_file.write_text("id\n1\n")
    with pytest.raises(TargetTableError, match=r"orders.csv' is a file"):
        DELTA_BUILDS[build](str(a_file))
    assert_untouched(share_topic, values)
    # A new location is the writer's to create.
    DELTA_BUILDS[build](str(tmp_path / "new"))


def test_a_missing_kafka_topic_is_refused_and_none_is_created(
    embedded_broker: EmbeddedBroker, share_topic: ShareTopic
) -> None:
    values = records_waiting(share_topic)
    config = embedded_broker.client_config()
    for build in (lambda: KafkaTopicSink("no-such-output", config),
                  lambda: IdempotentUpsertSink.sql(
                      "sqlite://", "t", create_table=True,
                      dead_letters=KafkaDeadLetters("no-such-letters", config))):
        with pytest.raises(TargetTableError, match=r"topic 'no-such-\w+' does not exist on the "
                           r"Kafka cluster at") as refused:
            build()
        assert_one_line(refused.value)
    assert_untouched(share_topic, values)
    listed = AdminClient(config).list_topics(timeout=30).topics
    assert share_topic.topic in listed
    assert not {"no-such-output", "no-such-letters"} & set(listed)
    # The source's own topic is there: a sink writing to it is accepted.
    KafkaTopicSink(share_topic.topic, config).close()


def test_a_kafka_cluster_that_does_not_answer_is_refused_in_one_line() -> None:
    with pytest.raises(TargetTableError, match=r"127.0.0.1:1 did not list its topics within"
                       ) as refused:
        KafkaTopicSink("orders", {"bootstrap.servers": "127.0.0.1:1"})
    assert_one_line(refused.value)


@pytest.mark.kafka
def test_a_missing_topic_on_apache_kafka_is_refused_before_any_record(
    kafka_topic: ShareTopic,
) -> None:
    """Apache Kafka creates a topic a producer asks for by default
    (``auto.create.topics.enable``): listing the topics asks for none."""
    values = records_waiting(kafka_topic)
    config = {"bootstrap.servers": kafka_topic.bootstrap_servers}
    with pytest.raises(TargetTableError, match=f"'{kafka_topic.topic}-out' does not exist"
                       ) as refused:
        KafkaTopicSink(f"{kafka_topic.topic}-out", config)
    assert_one_line(refused.value)
    assert_untouched(kafka_topic, values)


def test_check_on_create_false_defers_the_check_to_check_target(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'absent.db'}"
    sink = IdempotentUpsertSink.sql(url, "events", check_on_create=False)
    with pytest.raises(TargetTableError, match=r"'events' does not exist"):
        sink.check_target()
