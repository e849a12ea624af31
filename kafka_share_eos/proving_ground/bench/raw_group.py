"""Raw client loops in processes of their own: the yardstick of several consumers.

``processes`` Python processes each run a bare client loop in one group and read one topic
together until the group has every record:

- ``share``: a ``ShareConsumer`` (explicit mode: poll, ACCEPT each record, ``commit_sync``), as
  :mod:`~kafka_share_eos.proving_ground.bench.source`'s raw loop, in a share group;
- ``consumer``: a ``Consumer`` in a consumer group (``consume`` up to ``poll_records``, then a
  synchronous offset commit), the queue-less way to read a topic.

Every process first subscribes and is then released at the same instant; the time is from that
instant to the last record any process received. Joining the group is in it (the first poll
joins), as it is in the raw loop of :mod:`~kafka_share_eos.proving_ground.bench.source` and in a
query's first micro-batch, whose consumers join then.
The processes are spawned, not forked: the caller may hold a JVM and librdkafka threads (so a
script that calls :func:`drain` needs the ``if __name__ == "__main__":`` guard).
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any, Literal

Kind = Literal["share", "consumer"]
START_TIMEOUT_S = 120.0
DRAIN_TIMEOUT_S = 600.0


def _client(kind: Kind, bootstrap: str, group: str, poll_records: int) -> Any:
    from confluent_kafka import Consumer, ShareConsumer

    if kind == "share":
        return ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit",
                              "max.poll.records": poll_records})
    return Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest", "enable.auto.commit": False})


def _loop(kind: Kind, bootstrap: str, topic: str, group: str, poll_records: int,
          records: int, ready: Any, go: Any, seen: Any, out: Any) -> None:
    """One process: subscribe, wait for ``go``, read until the group's count ``seen`` reaches
    ``records``; put (own records, time of its last record) on ``out``."""
    from confluent_kafka import AcknowledgeType

    client = _client(kind, bootstrap, group, poll_records)
    client.subscribe([topic])
    ready.release()
    go.wait()
    mine, last = 0, 0.0
    deadline = time.monotonic() + DRAIN_TIMEOUT_S
    while seen.value < records and time.monotonic() < deadline:
        if kind == "share":
            messages = client.poll(0.2)
            for message in messages:
                client.acknowledge(message, AcknowledgeType.ACCEPT)
            if messages:
                client.commit_sync()
        else:
            messages = [m for m in client.consume(poll_records, 0.2) if m.error() is None]
            if messages:
                client.commit(asynchronous=False)
        if messages:
            last = time.time()
            mine += len(messages)
            with seen.get_lock():
                seen.value += len(messages)
    client.close()
    out.put((mine, last))


def drain(kind: Kind, bootstrap: str, topic: str, records: int, processes: int, group: str,
          poll_records: int = 10_000) -> dict[str, Any]:
    """Read ``records`` records of ``topic`` with ``processes`` raw loops in group ``group``.

    Returns:
        ``records`` read, ``seconds`` from the release to the last record,
        ``records_per_second`` (the records asked for over those seconds) and each process's
        records (``per_process``).

    Raises:
        RuntimeError: a process did not subscribe in time, or the group did not read every record.
    """
    context = multiprocessing.get_context("spawn")
    ready, go = context.Semaphore(0), context.Event()
    seen, out = context.Value("q", 0), context.Queue()
    workers = [context.Process(target=_loop, args=(kind, bootstrap, topic, group, poll_records,
                                                   records, ready, go, seen, out), daemon=True)
               for _ in range(processes)]
    for worker in workers:
        worker.start()
    try:
        for _ in workers:
            if not ready.acquire(timeout=START_TIMEOUT_S):
                raise RuntimeError(
                    f"a raw {kind} loop did not subscribe within {START_TIMEOUT_S:.0f} s")
        started = time.time()
        go.set()
        ends = [out.get(timeout=DRAIN_TIMEOUT_S + 60) for _ in workers]
    except BaseException:
        # Stopped (a signal, Ctrl-C) or failed: the loops go now, not after their drain.
        for worker in workers:
            worker.kill()
        raise
    finally:
        for worker in workers:
            worker.join(30)
            if worker.is_alive():
                worker.kill()
                worker.join()
    total = sum(mine for mine, _ in ends)
    if total < records:
        raise RuntimeError(f"{processes} raw {kind} loops read {total} of {records} records")
    seconds = max(last for _, last in ends) - started
    return {"records": total, "seconds": seconds, "records_per_second": records / seconds,
            "per_process": [mine for mine, _ in ends]}
