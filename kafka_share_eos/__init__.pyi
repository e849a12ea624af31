"""The public names of kafka_share_eos, each with the module it loads from.

This stub is the one table of the package's exports: type checkers read it, and at run time
it drives ``__all__`` and the lazy loading of every name (``lazy_loader.attach_stub``), so
importing the package loads none of the modules below until a name is first used.
"""

from .deadletter import DEAD_LETTER_SCHEMA as DEAD_LETTER_SCHEMA
from .deadletter import BrokerDeadLetters as BrokerDeadLetters
from .deadletter import DeadLetterPolicy as DeadLetterPolicy
from .deadletter import DeadLetterSink as DeadLetterSink
from .deadletter import DeltaDeadLetters as DeltaDeadLetters
from .deadletter import KafkaDeadLetters as KafkaDeadLetters
from .deadletter import SqlDeadLetters as SqlDeadLetters
from .deadletter import open_dead_letters as open_dead_letters
from .deadletter.iceberg import IcebergDeadLetters as IcebergDeadLetters
from .deltaspark import with_delta_spark as with_delta_spark
from .errors import AppIdConflictError as AppIdConflictError
from .errors import BatchIdReusedError as BatchIdReusedError
from .errors import ClaimConflictError as ClaimConflictError
from .errors import CommitConflictError as CommitConflictError
from .errors import ConfigurationError as ConfigurationError
from .errors import DatabaseUnavailableError as DatabaseUnavailableError
from .errors import DatabaseUnreachableError as DatabaseUnreachableError
from .errors import DecisionOverruledError as DecisionOverruledError
from .errors import DeliveryLimitReached as DeliveryLimitReached
from .errors import GroupConfigError as GroupConfigError
from .errors import JournalError as JournalError
from .errors import KafkaAccessError as KafkaAccessError
from .errors import KafkaShareEosError as KafkaShareEosError
from .errors import KafkaTransactionError as KafkaTransactionError
from .errors import LocationNotFoundError as LocationNotFoundError
from .errors import MissingColumnsError as MissingColumnsError
from .errors import MissingExtraError as MissingExtraError
from .errors import NullIdentityError as NullIdentityError
from .errors import ObjectStoreError as ObjectStoreError
from .errors import (
    PreparedTransactionsDisabledError as PreparedTransactionsDisabledError,
)
from .errors import (
    ShareGroupNotReadCommittedError as ShareGroupNotReadCommittedError,
)
from .errors import SinkConfigurationError as SinkConfigurationError
from .errors import SourceOptionError as SourceOptionError
from .errors import StoreUnreachableError as StoreUnreachableError
from .errors import TargetTableError as TargetTableError
from .errors import TransformShapeError as TransformShapeError
from .errors import TwoPhaseCommitError as TwoPhaseCommitError
from .errors import UnsupportedFormatError as UnsupportedFormatError
from .errors import ValueNotStorableError as ValueNotStorableError
from .ledger import IcebergLedger as IcebergLedger
from .ledger import RetentionPolicy as RetentionPolicy
from .monitoring import MetricsServer as MetricsServer
from .monitoring import PipelineMetrics as PipelineMetrics
from .monitoring import serve_metrics as serve_metrics
from .pipeline_status import journal_status as journal_status
from .proving_ground.broker import EmbeddedBroker as EmbeddedBroker
from .proving_ground.broker import EmbeddedBrokerError as EmbeddedBrokerError
from .proving_ground.broker import LibrdkafkaNotFoundError as LibrdkafkaNotFoundError
from .proving_ground.broker import TopicSpec as TopicSpec
from .registration import register as register
from .sinks import DeltaAppendSink as DeltaAppendSink
from .sinks.iceberg_append import IcebergAppendSink as IcebergAppendSink
from .sinks.sql_values import postgres_array as postgres_array
from .strategies import BatchReport as BatchReport
from .strategies import CheckpointDedupStore as CheckpointDedupStore
from .strategies import IdempotentUpsertSink as IdempotentUpsertSink
from .strategies import KafkaTopicSink as KafkaTopicSink
from .strategies import RecordIdentity as RecordIdentity
from .strategies import TwoPhaseCommitCoordinator as TwoPhaseCommitCoordinator
from .twophase import CommitResult as CommitResult
from .twophase import DecisionLog as DecisionLog
from .twophase import FileDecisionLog as FileDecisionLog
from .twophase import Participant as Participant
from .twophase import RecoveryReport as RecoveryReport
from .twophase import Token as Token
from .twophase import Transaction as Transaction
from .twophase import TransactionCoordinator as TransactionCoordinator
from .twophase.delta import DeltaParticipant as DeltaParticipant
from .twophase.iceberg import IcebergParticipant as IcebergParticipant
from .twophase.outbox import OutboxParticipant as OutboxParticipant
from .twophase.postgres import PostgresParticipant as PostgresParticipant
from .twophase.postgres_log import PostgresDecisionLog as PostgresDecisionLog

__version__: str
