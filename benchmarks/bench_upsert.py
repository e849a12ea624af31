"""Benchmark of the idempotent upsert sink against a plain append of the same rows.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.upsert`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.upsert import main

if __name__ == "__main__":
    main()
