"""The README's pipeline from a Spark Connect client, as a process of its own.

Usage: ``python -m helpers.connect_client URL BOOTSTRAP TOPIC GROUP WORKDIR``. The client opens
``SparkSession.builder.remote(URL)``, registers the ``kafka-share`` source and drains the group
(``availableNow``) through ``foreachBatch(IdempotentUpsertSink.sql(...))`` into
``WORKDIR/orders.db``; journal and checkpoint go under ``WORKDIR`` too, which the server reaches
on the same machine. Before it stops its session it prints one JSON line: its PySpark's version
and the command lines of every process it started, of which none may be a JVM.

It needs only PySpark's Connect client, the toolkit's core and SQLAlchemy, so it runs in the
``pyspark-client`` environment too.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from pyspark.sql import SparkSession

import kafka_share_eos
from kafka_share_eos import IdempotentUpsertSink
from kafka_share_eos.proving_ground.streams import share_stream, source_options


def _children(parent: int) -> dict[int, str]:
    """Every process under ``parent`` with its command line, from /proc."""
    parents: dict[int, int] = {}
    commands: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # The command's name may hold spaces and parentheses: the fields follow its last ')'.
            stat = (entry / "stat").read_text()
            parents[int(entry.name)] = int(stat[stat.rindex(")") + 2:].split()[1])
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(
                b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue
    found, frontier = {}, [parent]
    while frontier:
        current = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == current and pid not in found:
                found[pid] = commands[pid]
                frontier.append(pid)
    return found


def main(url: str, bootstrap: str, topic: str, group: str, workdir: str) -> None:
    # The SQLite target's directory, which its check at construction wants to exist.
    Path(workdir).mkdir(parents=True, exist_ok=True)
    spark = SparkSession.builder.remote(url).getOrCreate()
    kafka_share_eos.register(spark)
    orders = share_stream(spark, source_options(
        bootstrap, group, topic, Path(workdir, "journal"),
        **{"kafka.max.poll.records": "100"}, availableNowIdleMs="3000",
    ))
    sink = IdempotentUpsertSink.sql(f"sqlite:///{Path(workdir, 'orders.db')}", "orders",
                                    create_table=True)
    (
        orders.writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(Path(workdir, "checkpoint")))
        .trigger(availableNow=True)
        .start()
        .awaitTermination()
    )
    import pyspark

    print(json.dumps({"pyspark": pyspark.__version__, "server": spark.version,
                      "children": list(_children(os.getpid()).values())}))
    spark.stop()


if __name__ == "__main__":
    main(*sys.argv[1:6])
