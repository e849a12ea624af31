"""Benchmark of the Iceberg targets against pyiceberg's own append and ``Table.upsert``.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.iceberg`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.iceberg import main

if __name__ == "__main__":
    main()
