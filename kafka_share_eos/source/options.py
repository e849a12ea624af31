"""Options of the ``kafka-share`` source: names follow Spark's own Kafka source.

Every ``kafka.*`` option goes to the confluent-kafka ``ShareConsumer`` with the prefix stripped;
the source owns a few client settings (group id, acknowledgement mode, poll size) and refuses the
Spark-Kafka options that have no meaning for a share group, naming the option in the error.
``startingOffsets`` keeps its Spark meaning for a new group only: it becomes the group's
``share.auto.offset.reset`` (:mod:`~kafka_share_eos.source.starting_offsets`).
"""

from __future__ import annotations

import difflib
import enum
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from kafka_share_eos.errors import SourceOptionError as SourceOptionError
from kafka_share_eos.source.batch_size import DEFAULT_MAX_POLL_RECORDS as DEFAULT_MAX_POLL_RECORDS
from kafka_share_eos.source.batch_size import check_cap, poll_size, slot_share
from kafka_share_eos.storage import Location, supports_write_if_absent

FORMAT = "kafka-share"
"""The name of the source: ``spark.readStream.format("kafka-share")``."""
KAFKA_PREFIX = "kafka."
# Options passed to the journal's object store as they are (endpoint, region, credentials).
STORAGE_PREFIX = "storage."
DEFAULT_POLL_TIMEOUT_MS = 1000
DEFAULT_AVAILABLE_NOW_IDLE_MS = 5000
# Kafka's default group.share.record.lock.duration.ms.
DEFAULT_LOCK_DURATION_MS = 30_000
# Kafka's default group.share.session.timeout.ms.
DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_LOCK_BUDGET_WARN_FRACTION = 0.8


class AckPolicy(enum.Enum):
    """When the source ACCEPTs the records it fetched.

    ``AFTER_COMMIT``: once Spark has committed the micro-batch holding them (records stay locked
    while the batch runs). ``AFTER_JOURNAL``: right after they are durable in the journal (short
    lock holding; the journal alone carries them until the batch commits).
    """

    AFTER_COMMIT = "afterCommit"
    AFTER_JOURNAL = "afterJournal"


class LockBudgetAction(enum.Enum):
    """What the source does when a batch holds its records' locks too long.

    ``WARN``: log a warning naming the batch. ``SWITCH_TO_AFTER_JOURNAL``: also acknowledge
    every later batch of this run right after its journal write, as ``acknowledge=afterJournal``.
    """

    WARN = "warn"
    SWITCH_TO_AFTER_JOURNAL = "switchToAfterJournal"


# Option names are matched case-insensitively (Spark lower-cases them); errors use these spellings.
_REQUIRED = {
    "kafka.bootstrap.servers": "the Kafka brokers to connect to (host:port[,host:port])",
    "kafka.share.group.id": "the share group to consume as",
    "subscribe": "a comma-separated list of topics",
    "journalPath": "a durable directory for the batch journal: a local path, an object store "
    "URI (s3://, az://, abfss://, gs://) or another pyarrow.fs URI",
}

_REFUSED = {
    "endingOffsets": "share groups have no ending offsets; use trigger(availableNow=True) to drain",
    "startingOffsetsByTimestamp": "a new share group starts at one position for every "
    "partition; use 'startingOffsets' with a duration back from now (e.g. PT1H)",
    "startingTimestamp": "use 'startingOffsets' with a duration back from now (e.g. PT1H)",
    "endingOffsetsByTimestamp": "share groups have no ending offsets",
    "endingTimestamp": "share groups have no ending offsets",
    "assign": "share groups assign partitions on the broker; use 'subscribe'",
    "subscribePattern": "share consumers subscribe to topic names; use 'subscribe'",
    "failOnDataLoss": "share groups do not expose offset gaps to the consumer",
    "maxOffsetsPerTrigger": "use 'maxRecordsPerTrigger'",
    "minOffsetsPerTrigger": "a share group cannot wait for a minimum",
    "minPartitions": "each journal segment becomes one Spark partition",
    "kafka.group.id": "use 'kafka.share.group.id' for the share group",
    "kafka.enable.auto.commit": "share consumers acknowledge records instead of committing offsets",
    "kafka.auto.offset.reset": "use 'startingOffsets' (a share group's start is its "
    "share.auto.offset.reset group config)",
    "kafka.share.acknowledgement.mode": "the source acknowledges explicitly; choose the policy "
    "with 'acknowledge' (afterCommit or afterJournal)",
}

_OPTIONAL = (
    "consumers", "maxRecordsPerTrigger", "pollTimeoutMs", "availableNowIdleMs", "acknowledge",
    "includeHeaders", "lockDurationMs", "sessionTimeoutMs", "lockBudgetWarnFraction",
    "lockBudgetAction", "startingOffsets",
)
# Each documented option by the lower-case key Spark hands the source.
_KNOWN = {name.lower(): name for name in (*_REQUIRED, *_OPTIONAL)}

_T = TypeVar("_T")


def _unknown(name: str) -> str:
    """The error for an option nobody documented, naming the nearest documented one in its
    documented spelling: Spark hands the source ``startingoffest`` for ``startingOffest``."""
    message = f"unknown option {name!r} for the kafka-share source"
    nearest = difflib.get_close_matches(name.lower(), _KNOWN, n=1, cutoff=0.75)
    if nearest:
        return f"{message}: did you mean {_KNOWN[nearest[0]]!r}?"
    return f"{message}; its options are listed in docs/configuration.md"
_Choice = TypeVar("_Choice", bound=enum.Enum)


def _positive_int(name: str, raw: str) -> int:
    problem = f"option {name!r} must be a positive integer, got {raw!r}"
    try:
        value = int(raw.strip())
    except ValueError:
        raise SourceOptionError(problem) from None
    if value <= 0:
        raise SourceOptionError(problem)
    return value


def _boolean(name: str, raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    raise SourceOptionError(f"option {name!r} must be 'true' or 'false', got {raw!r}")


def _fraction(name: str, raw: str) -> float:
    problem = f"option {name!r} must be a number greater than 0 and at most 1, got {raw!r}"
    try:
        value = float(raw.strip())
    except ValueError:
        raise SourceOptionError(problem) from None
    # NaN fails both comparisons, so it is refused too.
    if not 0 < value <= 1:
        raise SourceOptionError(problem)
    return value


def _choice(name: str, raw: str, choices: type[_Choice]) -> _Choice:
    for choice in choices:
        if raw.strip().lower() == str(choice.value).lower():
            return choice
    expected = " or ".join(repr(c.value) for c in choices)
    raise SourceOptionError(f"option {name!r} must be {expected}, got {raw!r}")


# Kafka's by_duration takes java.time.Duration's ISO-8601 form, PnDTnHnMn.nS, never negative.
_DURATION = re.compile(r"P(?=[0-9]|T[0-9])(?:[0-9]+D)?"
                       r"(?:T(?=[0-9])(?:[0-9]+H)?(?:[0-9]+M)?(?:[0-9]+(?:\.[0-9]{1,9})?S)?)?")
_BY_DURATION = "by_duration:"


def _starting_offsets(name: str, raw: str) -> str:
    """The ``share.auto.offset.reset`` value ``startingOffsets`` asks for, in Kafka's spelling."""
    text = raw.strip()
    if text.lower() in ("earliest", "latest"):
        return text.lower()
    duration = text[len(_BY_DURATION):] if text.lower().startswith(_BY_DURATION) else text
    if _DURATION.fullmatch(duration.upper()):
        return _BY_DURATION + duration.upper()
    raise SourceOptionError(
        f"option {name!r} must be 'earliest', 'latest' or how far back from now a new share "
        "group starts, as an ISO-8601 duration (PnDTnHnMn.nS: 'PT1H', 'P1D', 'P1DT12H', "
        f"or Kafka's own 'by_duration:PT1H'), got {raw!r}"
    )


def _topics(raw: str) -> tuple[str, ...]:
    topics = tuple(t.strip() for t in raw.split(",") if t.strip())
    if not topics:
        raise SourceOptionError(f"option 'subscribe' must name at least one topic, got {raw!r}")
    if len(set(topics)) != len(topics):
        raise SourceOptionError(f"option 'subscribe' names a topic twice: {raw!r}")
    return topics


@dataclass(frozen=True)
class SourceOptions:
    """The validated options of one ``kafka-share`` stream."""

    topics: tuple[str, ...]
    journal_path: str
    ack_policy: AckPolicy = AckPolicy.AFTER_COMMIT
    max_records_per_trigger: int | None = None
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    available_now_idle_ms: int = DEFAULT_AVAILABLE_NOW_IDLE_MS
    include_headers: bool = False
    lock_duration_ms: int = DEFAULT_LOCK_DURATION_MS
    lock_budget_warn_fraction: float = DEFAULT_LOCK_BUDGET_WARN_FRACTION
    lock_budget_action: LockBudgetAction = LockBudgetAction.WARN
    # Out of repr: it holds the client's secrets (sasl.password, ssl.key.password, ...).
    consumer_config: Mapping[str, str] = field(default_factory=dict, repr=False)
    # Out of repr too: the journal store's credentials.
    storage_options: Mapping[str, str] = field(default_factory=dict, repr=False)
    consumers: int = 1
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    delivery_count_limit: int | None = None
    """The share group's ``share.delivery.count.limit``, when its brokers told it."""
    join_ms: int = 0
    """How long a new consumer may wait for its first partitions, when its brokers told it."""
    starting_offsets: str | None = None
    """Where a new share group starts, as its ``share.auto.offset.reset`` (``earliest``,
    ``latest`` or ``by_duration:<ISO-8601>``); None leaves the group's setting alone."""
    given: frozenset[str] = frozenset()
    """The optional options the stream set, spelled as in the docs."""

    @property
    def journal(self) -> Location:
        """Where the journal lives, with its store's settings (the ``storage.*`` options)."""
        return Location(self.journal_path, self.storage_options)

    @property
    def group_id(self) -> str:
        """The share group (``kafka.share.group.id``)."""
        return self.consumer_config["group.id"]

    @property
    def dead_member_holds_ms(self) -> int:
        """How long records a consumer acquired may stay out of reach after it died without
        leaving the group: until their lock expires and the group drops the member (which
        keeps its partitions until then)."""
        return max(self.lock_duration_ms, self.session_timeout_ms)

    @property
    def max_poll_records(self) -> int:
        """Records one poll returns at most (the client's ``max.poll.records``)."""
        return int(self.consumer_config["max.poll.records"])

    def slot_records(self, slot: int) -> int:
        """Records slot ``slot`` takes per micro-batch at most, over one poll or several: its
        share of ``maxRecordsPerTrigger`` (the shares add up to it exactly, the first slots
        taking one more when it does not divide), or one poll's when that is not set. A slot
        beyond ``consumers`` (carried there by a run with more) takes nothing more."""
        return slot_share(self.max_records_per_trigger, self.consumers, slot,
                          self.max_poll_records)

    @property
    def on_executors(self) -> bool:
        """Whether the share consumers run in executor tasks (``consumers`` above 1) rather
        than one in Spark's source runner."""
        return self.consumers > 1

    @classmethod
    def parse(cls, options: Mapping[str, str]) -> SourceOptions:
        """Validate Spark's option map; raise :class:`SourceOptionError` naming the bad option."""
        given = {name.lower(): (name, str(value)) for name, value in options.items()}
        for name, reason in _REFUSED.items():
            if name.lower() in given:
                raise SourceOptionError(
                    f"option {name!r} is not supported by the kafka-share source: {reason}"
                )
        for name, meaning in _REQUIRED.items():
            if not given.get(name.lower(), ("", ""))[1].strip():
                raise SourceOptionError(f"option {name!r} is required: {meaning}")
        for key, (name, _) in given.items():
            if not key.startswith((KAFKA_PREFIX, STORAGE_PREFIX)) and key not in _KNOWN:
                raise SourceOptionError(_unknown(name))

        def raw(key: str) -> str | None:
            return given[key.lower()][1] if key.lower() in given else None

        def value(key: str, convert: Callable[[str, str], _T], default: _T) -> _T:
            text = raw(key)
            return default if text is None else convert(key, text)

        def choice(choices: type[_Choice]) -> Callable[[str, str], _Choice]:
            return lambda key, text: _choice(key, text, choices)

        consumers = value("consumers", _positive_int, 1)
        journal_path = given["journalpath"][1].strip()
        policy = _policy(consumers, raw("acknowledge"), journal_path)
        max_per_trigger = value("maxRecordsPerTrigger", _positive_int, None)
        check_cap(max_per_trigger, policy is AckPolicy.AFTER_COMMIT, consumers)
        client = {
            key[len(KAFKA_PREFIX) :]: text
            for key, (_, text) in given.items()
            if key.startswith(KAFKA_PREFIX) and key != "kafka.share.group.id"
        }
        client["group.id"] = given["kafka.share.group.id"][1].strip()
        client["share.acknowledgement.mode"] = "explicit"
        client["max.poll.records"] = str(poll_size(
            max_per_trigger, value("kafka.max.poll.records", _positive_int, None), consumers
        ))
        return cls(
            topics=_topics(given["subscribe"][1]),
            journal_path=journal_path,
            ack_policy=policy,
            max_records_per_trigger=max_per_trigger,
            poll_timeout_ms=value("pollTimeoutMs", _positive_int, DEFAULT_POLL_TIMEOUT_MS),
            available_now_idle_ms=value(
                "availableNowIdleMs", _positive_int, DEFAULT_AVAILABLE_NOW_IDLE_MS
            ),
            include_headers=value("includeHeaders", _boolean, False),
            lock_duration_ms=value("lockDurationMs", _positive_int, DEFAULT_LOCK_DURATION_MS),
            lock_budget_warn_fraction=value(
                "lockBudgetWarnFraction", _fraction, DEFAULT_LOCK_BUDGET_WARN_FRACTION
            ),
            lock_budget_action=value(
                "lockBudgetAction", choice(LockBudgetAction), LockBudgetAction.WARN
            ),
            consumer_config=client,
            storage_options={
                key[len(STORAGE_PREFIX) :]: text
                for key, (_, text) in given.items()
                if key.startswith(STORAGE_PREFIX)
            },
            consumers=consumers,
            session_timeout_ms=value(
                "sessionTimeoutMs", _positive_int, DEFAULT_SESSION_TIMEOUT_MS
            ),
            starting_offsets=value("startingOffsets", _starting_offsets, None),
            given=frozenset(name for name in _OPTIONAL if name.lower() in given),
        )


def _policy(consumers: int, given: str | None, journal_path: str) -> AckPolicy:
    """The ``acknowledge`` policy; with ``consumers`` above 1 only afterJournal (the default
    then) can work, and only on a journal that can refuse a second writer of a segment."""
    if consumers == 1:
        return AckPolicy.AFTER_COMMIT if given is None else _choice("acknowledge", given, AckPolicy)
    if given is not None and _choice("acknowledge", given, AckPolicy) is AckPolicy.AFTER_COMMIT:
        raise SourceOptionError(
            f"options 'consumers' ({consumers}) and 'acknowledge' (afterCommit) cannot be "
            "combined: a consumer in an executor task must acknowledge its records before the "
            "task ends, so consumers above 1 need acknowledge=afterJournal"
        )
    if not supports_write_if_absent(journal_path):
        raise SourceOptionError(
            f"option 'consumers' ({consumers}) needs 'journalPath' on a local or shared POSIX "
            "filesystem (path or file:// URI) or an object store (s3://, az://, abfss://, "
            f"gs://), got {journal_path!r}: each consumer's segment is created "
            "first-writer-wins, which that store cannot do atomically"
        )
    return AckPolicy.AFTER_JOURNAL
