"""kafka-share-eos: exactly-once effects for PySpark pipelines on Kafka share groups.

The data flow is share group -> source/journal -> strategy -> sink. Everything a pipeline
touches is importable from here:

- :func:`register`, which makes ``spark.readStream.format("kafka-share")`` available, and
  :func:`journal_status`, what a source's journal holds;
- the ``foreachBatch`` strategies :class:`IdempotentUpsertSink`, :class:`CheckpointDedupStore`
  and :class:`TwoPhaseCommitCoordinator`, with :class:`RecordIdentity`, :class:`BatchReport`
  and :class:`DeadLetterPolicy`;
- two-phase commit's :class:`Participant` protocol (with the :class:`Transaction` it prepares
  and the :class:`Token` it hands back), the :class:`PostgresParticipant`,
  :class:`DeltaParticipant`, :class:`IcebergParticipant` and :class:`OutboxParticipant`, the
  decision logs (:class:`FileDecisionLog`, :class:`PostgresDecisionLog`) and the engine
  underneath the strategy, :class:`TransactionCoordinator`, with its :class:`CommitResult` and
  :class:`RecoveryReport`;
- :class:`DeltaAppendSink` and :class:`IcebergAppendSink`, sinks for the checkpoint-dedup store,
  :class:`IcebergLedger`, its identity ledger in an Iceberg table, and :class:`RetentionPolicy`,
  which bounds its ledger;
- the dead-letter sinks (:class:`SqlDeadLetters`, :class:`DeltaDeadLetters`,
  :class:`IcebergDeadLetters`, :class:`KafkaDeadLetters`, :class:`BrokerDeadLetters` for the
  share group's own dead-letter queue on Kafka 4.4, the :class:`DeadLetterSink` protocol) and
  :func:`open_dead_letters`;
- :class:`KafkaShareEosError`, the base of every error the toolkit raises, and the errors a
  pipeline meets (docs/errors.md);
- :func:`postgres_array`, a batch's column as one PostgreSQL array parameter, for set-based
  two-phase effects;
- :func:`serve_metrics`, a Prometheus endpoint on the driver for the :class:`PipelineMetrics`
  of each query (extra ``metrics``), returning its :class:`MetricsServer`;
- :class:`EmbeddedBroker`, a share-group-capable Kafka broker in this process;
- :func:`with_delta_spark`, a ``SparkSession.Builder`` set up for Spark's own Delta
  (delta-spark).

Importing the package loads none of the optional dependencies (pyspark, deltalake, SQLAlchemy,
psycopg): every name loads its module on first access, and each backend loads its library when
it is first used. The modules they come from keep exporting them too. ``__init__.pyi`` is the
one table of these names: type checkers read it, and it drives ``__all__`` and the lazy loading.
"""

from __future__ import annotations

import lazy_loader

__version__ = "0.1.0"

_load, _, _lazy_names = lazy_loader.attach_stub(__name__, __file__)
__all__ = [*_lazy_names, "__version__"]


def __getattr__(name: str) -> object:
    if name not in _lazy_names:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return _load(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
