"""Dead letters: where strategies put the records they cannot apply, and how to read them back."""

from kafka_share_eos.deadletter.broker import BrokerDeadLetters
from kafka_share_eos.deadletter.delta import DeltaDeadLetters
from kafka_share_eos.deadletter.kafka import KafkaDeadLetters
from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA, Rejection, letters
from kafka_share_eos.deadletter.open import open_dead_letters
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.deadletter.sql import SqlDeadLetters

__all__ = [
    "DEAD_LETTER_SCHEMA",
    "BrokerDeadLetters",
    "DeadLetterSink",
    "DeltaDeadLetters",
    "KafkaDeadLetters",
    "Rejection",
    "SqlDeadLetters",
    "letters",
    "open_dead_letters",
]
