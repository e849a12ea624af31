"""The vocabulary of two-phase commit: transactions, tokens, participants and decisions.

A *transaction* is one attempt at applying one micro-batch. Every participant *prepares* its part
of it (does all the work, durably, without making it visible) and hands back a :class:`Token`
naming what it prepared. The coordinator logs a :class:`Decision` holding every token, and only
then tells the participants to commit. Tokens are plain JSON so that the decision log can hold
them and a fresh process can finish the work of a dead one.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from kafka_share_eos import formats
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.errors import TwoPhaseCommitError as TwoPhaseCommitError

if TYPE_CHECKING:
    import pyarrow as pa

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
TXID_PREFIX = "kse"


def check_name(kind: str, value: str) -> str:
    """Return ``value`` if it is usable inside transaction names, else raise ``ValueError``.

    Names end up in Postgres global transaction ids and file names, and recovery finds its own
    transactions by prefix, so they are restricted to letters, digits, ``_`` and ``-``.
    """
    if not _NAME.match(value):
        raise ConfigurationError(
            f"{kind} must be 1-64 characters of letters, digits, '_' or '-', got {value!r}"
        )
    return value


def txid_prefix(app_id: str) -> str:
    """The prefix shared by every transaction id of application ``app_id``."""
    return f"{TXID_PREFIX}:{check_name('app_id', app_id)}:"


def app_of(txid: str) -> str:
    """The ``app_id`` inside a transaction id ``kse:<app_id>:<batch_id>:<random>``."""
    return txid.split(":")[1]


@dataclass(frozen=True)
class Transaction:
    """One attempt at applying one batch, as seen by the participants.

    Attributes:
        app_id: names the pipeline; recovery only touches transactions of its own ``app_id``.
        batch_id: Spark's micro-batch id (informational: replays reuse it, ``txid`` is unique).
        txid: unique id of this attempt, ``kse:<app_id>:<batch_id>:<random>``.
        key_columns: the columns identifying a record; participants keep a ledger of them so
            that a record redelivered in a later batch is not applied twice.
    """

    app_id: str
    batch_id: int
    txid: str
    key_columns: tuple[str, ...]

    @classmethod
    def new(cls, app_id: str, batch_id: int, key_columns: Sequence[str]) -> Transaction:
        """A transaction with a fresh unique ``txid``."""
        txid = f"{txid_prefix(app_id)}{batch_id}:{uuid.uuid4().hex[:12]}"
        return cls(app_id, batch_id, txid, tuple(key_columns))


@dataclass(frozen=True)
class Token:
    """What a participant prepared: enough for any process to commit or abort it later.

    Attributes:
        participant: the participant's ``name``.
        txid: the transaction this token belongs to.
        rows_written: rows the participant will apply on commit (after its own deduplication).
        data: participant-specific JSON (a Postgres gid, a list of staged files, ...).
        part: tells apart several tokens of one participant in one transaction (one per Spark
            partition when preparing on the executors); empty otherwise.
    """

    participant: str
    txid: str
    rows_written: int = 0
    data: Mapping[str, Any] = field(default_factory=dict)
    part: str = ""

    def same_work(self, other: Token) -> bool:
        """Whether ``other`` names the same prepared work (its data may be less complete)."""
        return (self.participant, self.txid, self.part) == (other.participant, other.txid,
                                                            other.part)

    def to_json(self) -> dict[str, Any]:
        """This token as a JSON-serialisable dict."""
        return {
            "participant": self.participant,
            "txid": self.txid,
            "rows_written": self.rows_written,
            "data": dict(self.data),
            "part": self.part,
        }

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Token:
        """The token :meth:`to_json` produced."""
        return cls(
            participant=str(value["participant"]),
            txid=str(value["txid"]),
            rows_written=int(value.get("rows_written", 0)),
            data=dict(value.get("data", {})),
            part=str(value.get("part", "")),
        )


class Outcome(StrEnum):
    """What the coordinator decided for a transaction."""

    COMMIT = "commit"
    ABORT = "abort"


@dataclass(frozen=True)
class Decision:
    """The durable record that makes a transaction's outcome survive a coordinator crash."""

    txid: str
    batch_id: int
    outcome: Outcome
    tokens: tuple[Token, ...]

    @classmethod
    def abort(cls, txid: str) -> Decision:
        """The ABORT decision a process other than the transaction's coordinator writes for it."""
        return cls(txid, int(txid.split(":")[2]), Outcome.ABORT, ())

    def committed_token(self, token: Token) -> Token | None:
        """The logged token this decision commits for the same work as ``token``, if any.

        Only work listed in a commit decision is ever committed; the logged token is the one
        ``prepare`` returned, complete by construction.
        """
        if self.outcome is not Outcome.COMMIT:
            return None
        return next((t for t in self.tokens if t.same_work(token)), None)

    def to_json_text(self) -> str:
        """This decision as JSON text, with its format version."""
        return json.dumps(
            {
                formats.FIELD: formats.DECISION,
                "txid": self.txid,
                "batch_id": self.batch_id,
                "outcome": self.outcome.value,
                "tokens": [t.to_json() for t in self.tokens],
            },
            sort_keys=True,
        )

    @classmethod
    def from_json_text(cls, text: str, where: str) -> Decision:
        """The decision :meth:`to_json_text` produced, read from ``where``.

        Raises:
            UnsupportedFormatError: a later release wrote it, in a format this one cannot read.
        """
        value = json.loads(text)
        formats.check_format("two-phase decision", value.get(formats.FIELD), formats.DECISION,
                             where)
        return cls(
            txid=str(value["txid"]),
            batch_id=int(value["batch_id"]),
            outcome=Outcome(value["outcome"]),
            tokens=tuple(Token.from_json(t) for t in value["tokens"]),
        )


def store_first(
    decision: Decision, create: Callable[[], bool], read: Callable[[], Decision | None]
) -> Decision:
    """What a first-writer-wins :meth:`DecisionLog.write` returns: ``decision`` if
    ``create()`` stored it, else the decision already stored, read with ``read()``.

    A decision can vanish between a refused ``create()`` and the ``read()``: its transaction was
    fully resolved and the decision forgotten. Storing ``decision`` is then tried again, which
    is harmless: committing or aborting a resolved transaction does nothing.

    Raises:
        TwoPhaseCommitError: the stored decision vanished after every one of three tries.
    """
    for _ in range(3):
        if create():
            return decision
        stored = read()
        if stored is not None:
            return stored
    raise TwoPhaseCommitError(
        f"the decision of {decision.txid} was deleted three times while it was being stored: "
        f"is another process using app_id {app_of(decision.txid)!r} with this decision log?"
    )


@runtime_checkable
class Participant(Protocol):
    """A resource that can prepare work, then commit or abort it, across process crashes.

    Contract:

    - ``prepare`` does all the work durably and returns a :class:`Token`; the work must stay
      invisible until ``commit``, and survive the death of the calling process. It must apply
      each record (identified by ``txn.key_columns``) at most once across all transactions it
      ever committed: a ledger of applied keys, kept atomically with the effect.
    - ``commit`` and ``abort`` are idempotent, and may run in a different process than
      ``prepare`` did. Several applications may share a participant's target: a record another
      application committed after this prepare must not be applied again by ``commit``.
    - ``recover`` lists the tokens still prepared for transactions whose id starts with
      ``prefix``, so that a restarted coordinator can resolve them.
    """

    @property
    def name(self) -> str:
        """Unique among the participants of one coordinator; part of every token."""
        ...

    def prepare(self, rows: pa.Table, txn: Transaction) -> Token:
        """Durably stage the effect of ``rows`` (already free of in-batch duplicates)."""
        ...

    def commit(self, token: Token) -> int | None:
        """Make the staged work visible; a no-op if already committed.

        Returns the rows of the token left out because another application committed them
        first (``None`` or 0 when the participant cannot tell or there were none).
        """
        ...

    def abort(self, token: Token) -> None:
        """Discard the staged work; a no-op if already gone."""
        ...

    def recover(self, prefix: str) -> list[Token]:
        """Tokens of transactions starting with ``prefix`` that are prepared and unresolved."""
        ...


@runtime_checkable
class DecisionLog(Protocol):
    """Durable storage of decisions, keyed by transaction id.

    ``write`` must be durable when it returns: participants are told to commit right after.
    The first decision stored for a transaction id wins: a coordinator commits only when its
    own COMMIT decision is the stored one, and whoever resolves a transaction in doubt (an
    operator, a restarted run) stores an ABORT decision before rolling anything back. That
    makes resolving an application's transactions safe while it may still be alive.
    """

    def write(self, decision: Decision) -> Decision:
        """Store ``decision`` durably and atomically unless its transaction id already has one;
        return the decision stored for it (``decision`` itself, or the earlier one)."""
        ...

    def read(self, txid: str) -> Decision | None:
        """The decision stored for ``txid``, if any."""
        ...

    def delete(self, txid: str) -> None:
        """Forget a decision whose transaction is fully resolved; a no-op if absent."""
        ...

    def txids(self, prefix: str) -> list[str]:
        """Transaction ids with a stored decision that start with ``prefix``."""
        ...
