"""The options of ``kafka-share-eos verify``: each a flag or a value with a name for it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
from kafka_share_eos.proving_ground.verify.outages import OUTAGES
from kafka_share_eos.proving_ground.verify.points import DESCRIPTIONS

StrategyOpt = Annotated[
    list[str],
    typer.Option(metavar="NAME", help="Strategy to verify; repeatable or comma-separated: "
                 f"{', '.join(TARGETS)} (default: all but the unsafe control)."),
]
CrashPointsOpt = Annotated[
    list[str],
    typer.Option(metavar="POINT", help="Crash points; repeatable or comma-separated (default: "
                 f"every point of each strategy): {', '.join(DESCRIPTIONS)}."),
]
FaultsOpt = Annotated[
    list[str],
    typer.Option(metavar="FAULT", help="Faults run as cells of every strategy they fit, beside "
                 "the crash points; repeatable or comma-separated; Kafka's need --broker kafka "
                 "(a three-node cluster; worker-kill also a Spark standalone cluster; "
                 "rolling-upgrade one of its own per run, started on the Kafka release before "
                 "the launcher's); postgres-kill (strategies with PostgreSQL, a durable server "
                 "of its own per run), delta-maintenance (strategies with Delta tables) and "
                 "the store faults (--storage s3, an S3 server of their own per run) run on "
                 f"either broker: {', '.join(OUTAGES)}."),
]
FaultsOnlyOpt = Annotated[
    bool, typer.Option("--faults-only", help="Run the --faults cells only, no crash point.")
]
RecordsOpt = Annotated[int, typer.Option(min=1, metavar="N", help="Records produced per run.")]
RunsOpt = Annotated[
    int, typer.Option(min=1, metavar="N", help="Runs per strategy and crash point.")
]
CrashesPerRunOpt = Annotated[
    int, typer.Option(min=1, metavar="N",
                      help="Crash-restart cycles per run before the final drain.")
]
PerTriggerOpt = Annotated[
    int, typer.Option(min=1, metavar="N", help="Records per micro-batch of the pipelines: "
                      "maxRecordsPerTrigger under afterJournal, kafka.max.poll.records under "
                      "afterCommit.")
]
SeedOpt = Annotated[
    int, typer.Option(metavar="N", help="Seed of records, crash hits and kill moments.")
]
ParallelOpt = Annotated[int, typer.Option(min=1, metavar="N", help="Runs at a time.")]
RandomKillsOpt = Annotated[
    bool, typer.Option("--random-kills",
                       help="Also SIGKILL pipelines from outside at random moments.")
]
PipelinesOpt = Annotated[
    int, typer.Option(min=1, metavar="N", help="Applications consuming the share group into "
                      "the same sinks, each with its own checkpoint, journal and app_id; the "
                      "first is crashed at the run's point.")
]
_HANDOFFS = ("Every pipeline start holds one batch past the record lock at the strategy's hold "
             "point, so its records go to another application while it still holds them.")
_BAD_RECORDS = ("Add a null key, an invalid payload, an oversized value and a poison record to "
                "every run.")
_AFTER_JOURNAL = ("Pipelines ACCEPT records right after the journal write "
                  "(acknowledge=afterJournal) instead of after Spark's commit.")
HandoffsOpt = Annotated[bool, typer.Option("--handoffs", help=_HANDOFFS)]
SessionDropsOpt = Annotated[bool, typer.Option(
    "--session-drops", help="Drop every share session on the broker at random moments.")]
SlowSinkOpt = Annotated[
    bool, typer.Option("--slow-sink", help="Short record locks and batches that outlast them.")
]
BadRecordsOpt = Annotated[bool, typer.Option("--bad-records", help=_BAD_RECORDS)]
AfterJournalOpt = Annotated[bool, typer.Option("--after-journal", help=_AFTER_JOURNAL)]
ConsumersOpt = Annotated[
    int, typer.Option(min=1, metavar="N", help="Share consumers per pipeline (the source's "
                      "'consumers' option); above 1 they poll in executor tasks, under "
                      "afterJournal, and the slot.* crash points replace the source.* ones.")
]
PartitionsOpt = Annotated[
    int, typer.Option(min=1, metavar="N", help="Partitions of each run's topic.")
]
BrokerOpt = Annotated[
    str, typer.Option(metavar="KIND", help="Where the runs' share groups live: 'embedded' "
                      "(librdkafka's mock cluster in this process) or 'kafka' (Apache Kafka, "
                      "fetched once with Maven; needs Java 17+ and Maven).")
]
StorageOpt = Annotated[
    str, typer.Option(metavar="KIND", help="Where the runs keep journals, checkpoints, "
                      "ledgers, decision logs, Delta tables and dead letters: 'local' (the "
                      "run's directory), 's3' (a SeaweedFS S3 server started for the run; "
                      "checkpoints on s3a) or 'abfs' (Azurite, Azure Blob's emulator; "
                      "checkpoints stay local); the store's settings reach the pipelines "
                      "through their environment.")
]
PostgresUrlOpt = Annotated[
    str | None,
    typer.Option(metavar="URL", help="SQLAlchemy URL of a superuser on a PostgreSQL server "
                 "with max_prepared_transactions > 0; each run creates and drops a database "
                 "there (default: a throwaway local server)."),
]
WorkdirOpt = Annotated[
    Path | None,
    typer.Option(metavar="PATH", help="Where runs keep their state (default: a temp dir)."),
]
KeepOpt = Annotated[bool, typer.Option("--keep", help="Keep the working directory.")]
ResultsOpt = Annotated[
    Path | None,
    typer.Option(metavar="PATH", help="JSON-lines file recording every finished run; runs "
                 "already recorded there are not run again, so a long matrix can resume."),
]
SparkConnectOpt = Annotated[
    bool, typer.Option("--spark-connect", help="Run each pipeline as a client of a Spark "
                       "Connect server started for its run, and crash it at the Connect kinds "
                       "instead of the classic crash points: the server SIGKILLed and started "
                       "again, the client SIGKILLed, the server's foreachBatch worker "
                       "SIGKILLed, each while a batch is held mid-strategy.")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
