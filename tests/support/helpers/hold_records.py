"""A share consumer process that acquires records and never acknowledges them.

Usage: ``python -m helpers.hold_records BOOTSTRAP GROUP TOPIC``. Prints one JSON line listing
the ``[topic, partition, offset, delivery_count]`` it holds after its first non-empty poll, then
sleeps until it is killed.
"""

from __future__ import annotations

import json
import sys
import time

from helpers import consume, count_at_least, share_consumer


def main(bootstrap_servers: str, group_id: str, topic: str) -> None:
    with share_consumer(bootstrap_servers, group_id, [topic]) as consumer:
        held = consume(
            consumer, until=count_at_least(1), timeout=60, acknowledge=lambda _: None
        )
        print(json.dumps([[*d.identity, d.delivery_count] for d in held]), flush=True)
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3])
