"""The tests' Spark Connect server: a session answers, a kill leaves no process and the next
start serves the same URL with the data written before, servers started together take ports of
their own, a token admits only the clients presenting it and is written nowhere, and a client
process running a pipeline starts no JVM."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from helpers import produce
from helpers.client_runs import run_client, table_offsets

from kafka_share_eos.proving_ground.errors import SparkConnectServerError
from kafka_share_eos.proving_ground.launchers.processes import alive
from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer

if TYPE_CHECKING:
    from kafka_share_eos.proving_ground.broker import ShareTopic

pytestmark = [pytest.mark.connect, pytest.mark.timeout(300)]

TOKEN = "kse-secret-7f3a9c41d2b8"


@pytest.fixture(autouse=True)
def _client_environment_restored() -> Any:
    """A client session marks this process as Connect's in its environment; later tests of
    this worker with a classic session need it back as it was."""
    names = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE", "SPARK_LOCAL_REMOTE")
    before = {name: os.environ.get(name) for name in names}
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def files_holding(text: str, *roots: Path) -> list[Path]:
    """Every file under ``roots`` whose bytes hold ``text``."""
    return [path for root in roots for path in root.rglob("*")
            if path.is_file() and text.encode() in path.read_bytes()]


def test_a_session_answers(connect_spark: Any) -> None:
    assert connect_spark.range(10).selectExpr("sum(id) AS total").collect()[0].total == 45


def test_the_servers_python_workers_import_the_installed_pyspark_not_sparks_zip(
    connect_spark: Any, tmp_path: Path
) -> None:
    """A zip's modules are compiled anew in every worker: too slow for the 10 s Spark gives a
    query's foreachBatch worker to connect back on a loaded machine."""
    import pyspark

    seen = tmp_path / "pyspark-file"

    def note(batch_df: Any, batch_id: int) -> None:
        import pyspark as worker_pyspark

        seen.write_text(worker_pyspark.__file__ or "")

    query = (connect_spark.readStream.format("rate").load().writeStream.foreachBatch(note)
             .option("checkpointLocation", str(tmp_path / "checkpoint"))
             .trigger(availableNow=True).start())
    query.awaitTermination(120)
    assert seen.read_text() == pyspark.__file__


def test_a_killed_server_leaves_no_process_and_serves_its_url_again_with_its_data(
    tmp_path: Path,
) -> None:
    table = str(tmp_path / "numbers")
    with SparkConnectServer(short_lived=True) as server:
        url = server.url
        spark = server.session()
        spark.range(100).write.parquet(table)
        processes = server.processes()
        assert processes[0] == server.pid

        killed = server.kill()

        assert set(processes) <= set(killed)
        assert not [pid for pid in killed if alive(pid)]
        server.start()
        assert server.url == url
        again = server.session()
        assert again.read.parquet(table).selectExpr("sum(id) AS total").collect()[0].total == 4950
        again.stop()
    # Closed with the server: PySpark's exit hook would otherwise retry its cleanup call to the
    # gone server for minutes before this process could end.
    assert spark.client.is_closed


def test_servers_started_at_once_listen_on_ports_of_their_own() -> None:
    servers = [SparkConnectServer(short_lived=True, cores=1) for _ in range(2)]
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(SparkConnectServer.start, servers))
        assert servers[0].port != servers[1].port
        for server in servers:
            session = server.session()
            assert session.range(3).count() == 3
            session.stop()
    finally:
        for server in servers:
            server.stop()


def test_a_token_admits_only_its_clients_and_is_written_nowhere(
    share_topic: ShareTopic, tmp_path: Path
) -> None:
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    produce(share_topic.bootstrap_servers, share_topic.topic,
            [b"order-%d" % i for i in range(200)], partitions=share_topic.partitions)
    work = tmp_path / "pipeline"
    with SparkConnectServer(token=TOKEN, short_lived=True) as server:
        assert TOKEN in server.url
        without = ConnectSession.builder.remote(f"sc://localhost:{server.port}").create()
        try:
            with pytest.raises(Exception, match=r"(?i)unauthenticated|token|authoriz"):
                without.range(1).collect()
        finally:
            # Stopped, so that it is not left the process's default session once its server
            # is gone: the tests after this one would find it there.
            without.stop()

        # The client process takes the URL, token and all, as a user's program does.
        report = run_client(server.url, share_topic, work)

        admitted = server.session()
        assert report["server"] == admitted.version
        admitted.stop()
        log = server.log_file.read_bytes()
        assert log and TOKEN.encode() not in log
    assert len(table_offsets(work)) == 200 == len(set(table_offsets(work)))
    assert not files_holding(TOKEN, work)


def test_the_launchers_error_messages_leave_the_token_out() -> None:
    server = SparkConnectServer(token=TOKEN, short_lived=True,
                                extra_conf={"spark.master": f"local[{TOKEN}]"})
    with pytest.raises(SparkConnectServerError) as failure:
        server.start()
    assert TOKEN not in str(failure.value)
    assert "<token>" in str(failure.value)


def test_a_client_process_running_a_pipeline_starts_no_jvm(
    spark_connect_server: SparkConnectServer, share_topic: ShareTopic, tmp_path: Path
) -> None:
    produce(share_topic.bootstrap_servers, share_topic.topic,
            [b"order-%d" % i for i in range(150)], partitions=share_topic.partitions)

    report = run_client(spark_connect_server.url, share_topic, tmp_path)

    assert table_offsets(tmp_path) == sorted(set(table_offsets(tmp_path)))
    assert len(table_offsets(tmp_path)) == 150
    assert not [command for command in report["children"] if "java" in command]
