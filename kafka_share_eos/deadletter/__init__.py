"""Dead letters: where strategies put the records they cannot apply, and how to read them back."""

from .delta import DeltaDeadLetters
from .kafka import KafkaDeadLetters
from .letters import DEAD_LETTER_SCHEMA, Rejection, letters
from .open import open_dead_letters
from .sink import DeadLetterSink
from .sql import SqlDeadLetters

__all__ = [
    "DEAD_LETTER_SCHEMA",
    "DeadLetterSink",
    "DeltaDeadLetters",
    "KafkaDeadLetters",
    "Rejection",
    "SqlDeadLetters",
    "letters",
    "open_dead_letters",
]
