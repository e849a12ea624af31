"""The rows of the benchmarks that read with several consumers or on Apache Kafka: consumers
against one and against raw processes, and the peers a user would run instead."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kafka_share_eos.proving_ground.bench.ratios import SLOTS, Ratio, Target, count


def consumers_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """Several consumers on executors against one in the source runner and against as many raw
    share-consumer processes: records per second, driver CPU per micro-batch, and how many slots
    took records."""
    return consumer_rows(result, "consumers")


def consumer_rows(result: Mapping[str, Any], benchmark: str, where: str = "") -> list[Ratio]:
    """The rows of a consumers result
    (:func:`kafka_share_eos.proving_ground.bench.consumers.measure`) on a broker; ``where`` ends
    each row's name (``", Apache Kafka"``)."""
    one = result["1"]
    measured = len(result.get("rounds", {}).get("1", ()))
    rounds = f"; medians of {measured} rounds" if measured > 1 else ""
    partitions = f" over {result['partitions']} partitions" if "partitions" in result else ""
    rows = []
    for name in sorted((n for n in result if n.isdigit() and n != "1"), key=int):
        entry, consumers = result[name], int(name)
        rows.append(Ratio(
            benchmark,
            f"consumers={consumers} vs 1, records per second{where}",
            entry["rate_vs_one"],
            target=Target(">=", 1.0),
            detail=f"{entry['records_per_second']:,.0f} vs {one['records_per_second']:,.0f} "
            f"records/s{partitions}{rounds}",
        ))
        if "rate_vs_raw" in entry:
            rows.append(Ratio(
                benchmark,
                f"consumers={consumers} vs {consumers} raw ShareConsumer processes, "
                f"records per second{where}",
                entry["rate_vs_raw"],
                target=Target(">=", 0.8),
                detail=f"{entry['records_per_second']:,.0f} vs "
                f"{entry['raw_records_per_second']:,.0f} records/s, one share group each"
                f"{rounds}",
            ))
        if "driver_cpu_per_batch_vs_one" in entry:
            rows.append(Ratio(
                benchmark,
                f"consumers={consumers} vs 1, driver CPU per micro-batch{where}",
                entry["driver_cpu_per_batch_vs_one"],
                target=Target("<=", 1.1) if consumers >= 4 else None,
                detail=f"{entry['driver_cpu_ms_per_batch']:.1f} vs "
                f"{one['driver_cpu_ms_per_batch']:.1f} ms per micro-batch "
                f"({entry['driver_cpu_us_per_record']:.2f} vs "
                f"{one['driver_cpu_us_per_record']:.2f} µs/record): driver JVM, its Python "
                "processes and the driver's Python, no executor",
            ))
        per_slot = [slot["records"] for slot in entry["slots"]]
        rows.append(Ratio(
            benchmark,
            f"consumers={consumers}, slots that took records{where}",
            float(sum(1 for n in per_slot if n)),
            unit=SLOTS,
            target=Target(">=", consumers),
            detail=f"records per slot {', '.join(f'{n:,}' for n in per_slot)}; "
            f"{entry['members']} group members",
        ))
    return rows


def peers_ratios(result: Mapping[str, Any]) -> list[Ratio]:
    """On Apache Kafka: the source against a raw share-consumer loop, a share group against a
    consumer group, several consumers against as many raw processes, and each strategy's
    pipeline against Spark's own Kafka source."""
    measured = len(result["rounds"])
    rounds = f"; medians of {measured} rounds" if measured > 1 else ""
    rows = [
        Ratio(
            "kafka peers",
            "kafka-share source, afterJournal, stream rate vs raw ShareConsumer loop, "
            "Apache Kafka",
            result["source_vs_raw"],
            target=Target(">=", 0.9),
            detail=f"{result['source_records_per_second']:,.0f} vs "
            f"{result['raw_records_per_second']:,.0f} records/s, "
            f"{count(result['records'])} records{rounds}",
        ),
        Ratio(
            "kafka peers",
            "raw share-group loop vs raw consumer-group loop, Apache Kafka",
            result["share_vs_consumer_group"],
            detail=f"{result['share_loop_records_per_second']:,.0f} vs "
            f"{result['consumer_loop_records_per_second']:,.0f} records/s: Kafka's own price "
            f"for queues{rounds}",
        ),
    ]
    if "join_ratio" in result:  # absent from results saved before it was measured
        rows.append(Ratio(
            "kafka peers",
            "start() to first record: kafka-share query vs raw ShareConsumer subscribe to first "
            "record, Apache Kafka",
            result["join_ratio"],
            target=Target("<=", 1.1),
            detail=f"{result['join_query_s']:.2f} vs {result['join_raw_s']:.2f} s, of which the "
            f"first planning {result['join_query_planning_s']:.2f} s; a new group each, "
            f"share.heartbeat.interval.ms at Kafka's default{rounds}",
        ))
    rows += [row for row in consumer_rows(result["consumers"], "kafka peers", ", Apache Kafka")
             if "raw ShareConsumer processes" in row.name]
    peer = result["spark_kafka"]
    for key, records, target in (("strategies", "records", 0.8), ("long", "long_records", 1.0)):
        for name, entry in peer.get(key, {}).items():
            rows.append(_spark_kafka_row(
                f"end-to-end {name}: kafka-share exactly once vs Spark's Kafka source at least "
                f"once{'' if key == 'strategies' else ', ' + count(peer[records]) + ' records'}",
                entry, target, "format(\"kafka\") + consumer group + foreachBatch into the same "
                "sink", peer, peer[records]))
    if "topic_sink" in peer:
        rows.append(_spark_kafka_row(
            "Kafka topic sink exactly once vs Spark's Kafka sink at least once, kafka-share "
            "source", peer["topic_sink"], 0.9,
            "KafkaTopicSink against spark-sql-kafka-0-10's writer (format(\"kafka\"), key and "
            "value, from foreachBatch), each behind the same kafka-share query", peer,
            peer["records"]))
    return rows


def _spark_kafka_row(name: str, entry: Mapping[str, Any], target: float, peer_is: str,
                     peer: Mapping[str, Any], records: int) -> Ratio:
    """A contest of :mod:`~kafka_share_eos.proving_ground.bench.spark_kafka`: exactly once
    against Spark's Kafka connector, as a whole run and from the first records on."""
    last = entry["rounds"][-1]
    # From the first records on: without the share group's join (one heartbeat interval) and
    # Spark's offset lookup, which a short run is mostly made of.
    running = (f"from the first records on {entry['running_ratio']:.2f}x (start-up "
               f"{last['exactly_once']['start_s']:.1f} s against "
               f"{last['spark_kafka']['start_s']:.1f} s); ")
    return Ratio(
        "kafka peers", name, entry["ratio"], target=Target(">=", target),
        detail=f"{last['exactly_once']['records_per_second']:,.0f} vs "
        f"{last['spark_kafka']['records_per_second']:,.0f} records/s (last round); {running}"
        f"{peer_is}; {count(records)} records, {count(peer['per_trigger'])} per micro-batch; "
        f"median of {len(entry['rounds'])} rounds; Spark {peer['spark']}",
    )
