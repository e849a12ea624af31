"""Dead letters: how a strategy finds the records it cannot apply, where it puts them, and how
to read them back.

A refused row's way: :class:`Screening` (one batch) finds it, by the :class:`DeadLetterPolicy`
and the bisection of :mod:`~kafka_share_eos.deadletter.quarantine`; :func:`letters` makes its
letter; a :class:`DeadLetterSink` keeps it (SQL, Delta, a Kafka topic, or the share group's own
dead-letter queue through the journal's rejections).
"""

from kafka_share_eos.deadletter.broker import BrokerDeadLetters
from kafka_share_eos.deadletter.delta import DeltaDeadLetters
from kafka_share_eos.deadletter.kafka import KafkaDeadLetters
from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA, Rejection, letters
from kafka_share_eos.deadletter.open import count_dead_letters, open_dead_letters
from kafka_share_eos.deadletter.quarantine import DeadLetterPolicy
from kafka_share_eos.deadletter.screening import Screening
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.deadletter.sql import SqlDeadLetters

__all__ = [
    "DEAD_LETTER_SCHEMA",
    "BrokerDeadLetters",
    "DeadLetterPolicy",
    "DeadLetterSink",
    "DeltaDeadLetters",
    "KafkaDeadLetters",
    "Rejection",
    "Screening",
    "SqlDeadLetters",
    "count_dead_letters",
    "letters",
    "open_dead_letters",
]
