"""Benchmark of the source's journal and the checkpoint-dedup store on S3 against the local disk.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.object_store`, also run by
``kafka-share-eos bench``; ``--help`` lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.object_store import main

if __name__ == "__main__":
    main()
