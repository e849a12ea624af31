"""What a Spark Connect session costs a pipeline: the exactly-once upsert into PostgreSQL run
from a Connect client against the same pipeline in a classic session, on one machine.

Two Spark applications run side by side on this machine with the same cores and settings: the
classic session's driver in this process (``local[2]``), and a Spark Connect server
(:class:`~kafka_share_eos.proving_ground.launchers.spark_connect.SparkConnectServer`,
``local[2]``) whose client is this process. Each pipeline reads the same records from one
embedded broker in a share group of its own and upserts them into PostgreSQL through
:mod:`~kafka_share_eos.proving_ground.bench.end_to_end`'s strategy; in Connect the strategy is
pickled by the client and applies the batches in the server's foreachBatch worker. Rates are
taken as in the end-to-end benchmark; a round runs Connect, classic, classic, Connect and
compares the geometric means of the rates; the median ratio over the rounds is reported.

Run ``python -m kafka_share_eos.proving_ground.bench.connect --help``.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench.common import postgres_database, script_parser
from kafka_share_eos.proving_ground.bench.end_to_end import run_pipeline
from kafka_share_eos.proving_ground.bench.pipelines import contests
from kafka_share_eos.proving_ground.bench.ratios import TIMES, Ratio, Target, count
from kafka_share_eos.proving_ground.bench.streams import produce

TOPIC = "bench-connect"
RECENT_PROGRESS = {"spark.sql.streaming.numRecentProgressUpdates": "100000"}
"""Every micro-batch's progress is counted, not only Spark's last 100."""
_CONNECT_MARKS = ("SPARK_CONNECT_MODE_ENABLED", "SPARK_REMOTE")


@contextmanager
def _marks_put_back() -> Iterator[None]:
    """The process's environment as it was before a Connect client marked it: the benchmarks
    that follow, and the child processes they start, make classic sessions."""
    before = {name: os.environ.get(name) for name in _CONNECT_MARKS}
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def _classic() -> Iterator[None]:
    """A Connect client marks the process as Connect's, which turns PySpark's functions into
    Connect's: the classic session's pipeline runs without the marks."""
    with _marks_put_back():
        for name in _CONNECT_MARKS:
            os.environ.pop(name, None)
        yield


def _waiter(server: Any) -> Any:
    from kafka_share_eos.proving_ground.launchers.spark import source_runners

    def wait() -> None:
        deadline = time.monotonic() + 60
        while source_runners(server.pid):
            if time.monotonic() >= deadline:
                raise TimeoutError("the Connect server's kafka-share source runners stayed")
            time.sleep(0.05)

    return wait


def _strategy_seconds(strategy: Any, session: Any) -> float:
    """The time the strategy spent applying the batches it was handed (after ``toArrow``):
    the rest of Spark's ``addBatch`` is collecting each batch to Python, and in Connect the
    server's foreachBatch worker's own work."""
    from kafka_share_eos.strategies.session_reports import read_session_reports

    if session is None or not type(session).__module__.startswith("pyspark.sql.connect"):
        return float(sum(report.seconds for report in strategy.reports))
    value = read_session_reports(session, strategy.report_key)
    return 0.0 if value is None else sum(value.seconds)


def _round(sessions: dict[str, Any], server: Any, bootstrap: str, work: Path, url: str,
           records: int, per_trigger: int, n: int) -> dict[str, Any]:
    """Connect, classic, classic, Connect: both sides get the same places in the round."""
    upsert = contests(url, work)[0]
    runs: dict[str, list[dict[str, Any]]] = {"connect": [], "classic": []}
    for turn, side in enumerate(("connect", "classic", "classic", "connect")):
        tag = f"{side}-{n}-{turn}"
        strategy = upsert.exactly_once(tag.replace("-", "_"))
        if side == "classic":
            with _classic():
                timed = run_pipeline(sessions[side], bootstrap, work, strategy, tag, records,
                                     per_trigger, TOPIC)
        else:
            timed = run_pipeline(sessions[side], bootstrap, work, strategy, tag, records,
                                 per_trigger, TOPIC, wait_for_runners=_waiter(server))
        runs[side].append({**timed, "strategy_s": _strategy_seconds(strategy, sessions[side])})
    connect_rate, classic_rate = (
        statistics.geometric_mean(run["records_per_second"] for run in runs[side])
        for side in ("connect", "classic"))
    return {**runs, "connect_records_per_second": connect_rate,
            "classic_records_per_second": classic_rate, "ratio": connect_rate / classic_rate}


def run(records: int = 100_000, partitions: int = 8, per_trigger: int = 10_000, rounds: int = 3,
        postgres_url: str | None = None, value_bytes: int = 100) -> dict[str, Any]:
    """The pipeline from a Connect client and in a classic session, ``rounds`` times each way
    (see the module), over ``records`` records of ``value_bytes`` bytes in ``partitions``
    partitions, ``per_trigger`` per micro-batch, upserted into ``postgres_url`` (default: a
    throwaway server).

    Raises:
        ConfigurationError: fewer than one round.
        RuntimeError: a pipeline failed or did not read every record.
    """
    if rounds < 1:
        raise ConfigurationError(f"rounds must be at least 1, got {rounds}")
    from kafka_share_eos.proving_ground.broker import EmbeddedBroker
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.proving_ground.launchers.spark_connect import SparkConnectServer
    from kafka_share_eos.source import register

    with _marks_put_back(), EmbeddedBroker(topics=[f"{TOPIC}:{partitions}"]) as broker, \
            postgres_database(postgres_url) as url, SparkConnectServer() as server, \
            tempfile.TemporaryDirectory(prefix="kse-bench-connect-") as tmp:
        work, bootstrap = Path(tmp), broker.bootstrap_servers
        produce(bootstrap, TOPIC, records, partitions, value_bytes)
        with _classic():
            classic = local_spark_session("kafka-share-eos-bench-connect", config=RECENT_PROGRESS)
        connect = server.session()
        sessions = {"classic": classic, "connect": connect}
        try:
            with _classic():
                register(classic)
            connect.conf.set(*next(iter(RECENT_PROGRESS.items())))
            register(connect)
            # Untimed: each side starts its Python workers and loads the strategy's libraries.
            warm = contests(url, work)[0]
            with _classic():
                run_pipeline(classic, bootstrap, work, warm.exactly_once("warm_classic"),
                             "warm-classic", per_trigger, per_trigger, TOPIC)
            run_pipeline(connect, bootstrap, work, warm.exactly_once("warm_connect"),
                         "warm-connect", per_trigger, per_trigger, TOPIC,
                         wait_for_runners=_waiter(server))
            measured = [_round(sessions, server, bootstrap, work, url, records, per_trigger, n)
                        for n in range(1, rounds + 1)]
        finally:
            connect.stop()
            with _classic():
                classic.stop()
    return {"records": records, "partitions": partitions, "per_trigger": per_trigger,
            "cores": server.cores, "rounds": measured,
            "ratio": statistics.median(r["ratio"] for r in measured)}


def connect_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """The exactly-once upsert into PostgreSQL from a Connect client against a classic
    session."""
    *_, last = rounds = result["rounds"]
    each = ", ".join(f"{entry['ratio']:.2f}" for entry in rounds)
    return [Ratio(
        "connect",
        "end-to-end upsert, Postgres, exactly once: Spark Connect session vs classic session",
        result["ratio"], TIMES, Target(">=", 0.9),
        detail=f"{last['connect_records_per_second']:,.0f} vs "
        f"{last['classic_records_per_second']:,.0f} records/s (last round, Connect-classic-"
        f"classic-Connect; foreachBatch {last['connect'][0]['addBatch_s']:.1f} vs "
        f"{last['classic'][0]['addBatch_s']:.1f} s, of which the strategy's own "
        f"{last['connect'][0]['strategy_s']:.1f} vs {last['classic'][0]['strategy_s']:.1f} s, "
        f"the rest collecting the batches); a Connect server and a classic driver, "
        f"local[{result['cores']}] each, on this machine; {count(result['records'])} records, "
        f"{count(result['per_trigger'])} per micro-batch; median of {len(rounds)} rounds "
        f"[{each}]",
    )]


def main() -> None:
    parser = script_parser(__doc__, {"records": 100_000, "partitions": 8,
                                     "per_trigger": 10_000, "rounds": 3},
                           {"rounds": "rounds of Connect, classic, classic, Connect"})
    parser.add_argument("--postgres-url", help="SQLAlchemy URL of an existing database")
    args = vars(parser.parse_args())
    result = run(**args)
    print(json.dumps(result, indent=2))
    for row in connect_ratios(result):
        print(f"{row.name}: {row.value_text} (target {row.target_text}); {row.detail}")


if __name__ == "__main__":
    main()
