"""What exporting metrics costs a pipeline: the same exactly-once pipeline with its metrics
served and scraped, against without.

Two ``kafka-share`` queries read the same records from one embedded broker, each in a share
group of its own, through the same strategy (the upsert into Postgres of
:mod:`~kafka_share_eos.proving_ground.bench.end_to_end`). One runs with
:func:`~kafka_share_eos.serve_metrics` on, its Spark listener counting every progress event and
a scraper reading the endpoint every :data:`SCRAPE_INTERVAL_S` (Prometheus's default is 15 s),
the other without. Rates are taken as in the end-to-end benchmark; a round runs each pipeline
twice, served, plain, plain, served, and compares the geometric means of their rates; the
median ratio over the rounds is reported.
Run ``python -m kafka_share_eos.proving_ground.bench.metrics_cost --help``.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import threading
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.proving_ground.bench.common import postgres_database, script_parser
from kafka_share_eos.proving_ground.bench.end_to_end import run_pipeline
from kafka_share_eos.proving_ground.bench.pipelines import contests
from kafka_share_eos.proving_ground.bench.ratios import metrics_ratios
from kafka_share_eos.proving_ground.bench.streams import produce
from kafka_share_eos.proving_ground.streams import source_options

TOPIC = "bench-metrics"
SCRAPE_INTERVAL_S = 1.0


@contextmanager
def _scraped(url: str, scrapes: list[int]) -> Iterator[None]:
    """Read ``url`` every :data:`SCRAPE_INTERVAL_S` until the block ends; count the reads."""
    stop = threading.Event()

    def scrape() -> None:
        while not stop.wait(SCRAPE_INTERVAL_S):
            with urllib.request.urlopen(url, timeout=10) as response:
                response.read()
            scrapes[0] += 1

    scraper = threading.Thread(target=scrape, name="kse-bench-scraper", daemon=True)
    scraper.start()
    try:
        yield
    finally:
        stop.set()
        scraper.join()


def _served(spark: Any, bootstrap: str, work: Path, strategy: Any, tag: str, records: int,
            per_trigger: int) -> dict[str, Any]:
    """One pipeline with its metrics served, listened to and scraped."""
    from prometheus_client import CollectorRegistry

    from kafka_share_eos.monitoring import PipelineMetrics, serve_metrics

    options = source_options(bootstrap, f"bench-{tag}", TOPIC, work / f"journal-{tag}")
    pipeline = PipelineMetrics(tag, options, strategy)
    scrapes = [0]
    with serve_metrics(pipeline, port=0, addr="127.0.0.1", spark=spark,
                       registry=CollectorRegistry()) as server, _scraped(server.url, scrapes):
        timed = run_pipeline(spark, bootstrap, work, strategy, tag, records, per_trigger, TOPIC,
                             query_name=tag)
    return {**timed, "scrapes": scrapes[0]}


def _round(spark: Any, bootstrap: str, work: Path, url: str, records: int, per_trigger: int,
           n: int) -> dict[str, Any]:
    """Served, plain, plain, served: a pipeline's place changes its rate (with one run per
    side and the first side alternating, the first of each round was the slower one in all
    three rounds, by up to 40 %), and this order gives both sides the same places."""
    upsert = contests(url, work)[0]
    runs: dict[str, list[dict[str, Any]]] = {"served": [], "plain": []}
    for turn, side in enumerate(("served", "plain", "plain", "served")):
        tag = f"{side}-{n}-{turn}"
        strategy = upsert.exactly_once(tag.replace("-", "_"))
        runs[side].append(
            _served(spark, bootstrap, work, strategy, tag, records, per_trigger)
            if side == "served"
            else run_pipeline(spark, bootstrap, work, strategy, tag, records, per_trigger, TOPIC)
        )
    rates = {side: statistics.geometric_mean(r["records_per_second"] for r in sides)
             for side, sides in runs.items()}
    return {**runs, **{f"{side}_records_per_second": rate for side, rate in rates.items()},
            "ratio": rates["served"] / rates["plain"]}


def run(records: int = 100_000, partitions: int = 8, per_trigger: int = 10_000, rounds: int = 3,
        postgres_url: str | None = None, value_bytes: int = 100) -> dict[str, Any]:
    """The pipeline with and without its metrics served, in ``rounds`` rounds.

    Raises:
        ConfigurationError: ``rounds`` below 1.
        RuntimeError: a pipeline failed or did not read every record.
    """
    from kafka_share_eos.proving_ground.broker import EmbeddedBroker
    from kafka_share_eos.proving_ground.launchers.spark import local_spark_session
    from kafka_share_eos.source import register

    if rounds < 1:
        raise ConfigurationError(f"rounds must be at least 1, got {rounds}")
    with EmbeddedBroker(topics=[f"{TOPIC}:{partitions}"]) as broker, \
            postgres_database(postgres_url) as url, \
            tempfile.TemporaryDirectory(prefix="kse-bench-metrics-") as tmp:
        work, bootstrap = Path(tmp), broker.bootstrap_servers
        produce(bootstrap, TOPIC, records, partitions, value_bytes)
        spark = local_spark_session("kafka-share-eos-bench-metrics")
        try:
            spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
            register(spark)
            # Untimed: starts Spark's Python workers and loads the strategy's libraries.
            run_pipeline(spark, bootstrap, work, contests(url, work)[0].exactly_once("warm"),
                         "warm-up", per_trigger, per_trigger, TOPIC)
            measured = [_round(spark, bootstrap, work, url, records, per_trigger, n)
                        for n in range(1, rounds + 1)]
        finally:
            spark.stop()
    return {"records": records, "partitions": partitions, "per_trigger": per_trigger,
            "scrape_interval_s": SCRAPE_INTERVAL_S, "rounds": measured,
            "ratio": statistics.median(r["ratio"] for r in measured)}


def main() -> None:
    sizes = {"records": 100_000, "partitions": 8, "per_trigger": 10_000, "rounds": 3}
    parser = script_parser(__doc__, sizes)
    parser.add_argument("--postgres-url", help="SQLAlchemy URL of an existing database")
    args = parser.parse_args()
    result = run(args.records, args.partitions, args.per_trigger, args.rounds, args.postgres_url)
    print(json.dumps(result, indent=2))
    (row,) = metrics_ratios(result)
    print(f"{row.name}: {row.value_text} (target {row.target_text}); {row.detail}")


if __name__ == "__main__":
    main()
