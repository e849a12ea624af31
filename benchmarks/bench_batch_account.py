"""Where a micro-batch's time goes: a ``kafka-share`` pipeline beside Spark's Kafka pipeline,
step by step and CPU by process.

The implementation is :mod:`kafka_share_eos.proving_ground.bench.batch_account`; ``--help``
lists the sizes this script takes.
"""

from kafka_share_eos.proving_ground.bench.batch_account import main

if __name__ == "__main__":
    main()
