"""The runner's share-consumer session: poll, acknowledge, commit, close.

The consumer runs in explicit acknowledgement mode: every record of a poll must be acknowledged
before the next poll, which is what lets the source decide *when* records are ACCEPTed. Calls
may come from the runner's main thread or from the afterJournal pump; they never overlap.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any

from confluent_kafka import AcknowledgeType, IllegalStateException, KafkaException, ShareConsumer

from kafka_share_eos import faults
from kafka_share_eos.errors import SessionClosed as SessionClosed
from kafka_share_eos.sharegroup.access import SignInWatch, access_error
from kafka_share_eos.source.acks import AckStats
from kafka_share_eos.source.shutdown import SigtermHook

log = logging.getLogger("kafka_share_eos.source")

ACCEPT = AcknowledgeType.ACCEPT
RELEASE = AcknowledgeType.RELEASE
REJECT = AcknowledgeType.REJECT


class ShareSession:
    """One ``ShareConsumer`` subscribed to the stream's topics.

    ``held`` is the last poll's records while they await their acknowledgement (acquired at
    ``acquired_at``, a :func:`time.monotonic` reading); on SIGTERM (or :meth:`close`) they are
    RELEASEd, pending acknowledgements are committed and the consumer leaves the group.
    ``during_ack`` names the crash point hit halfway through an acknowledgement;
    ``on_close``, when set, runs once the consumer has left the group (on SIGTERM too).
    """

    def __init__(
        self, config: Mapping[str, str], topics: Sequence[str],
        during_ack: str = faults.DURING_ACK,
    ) -> None:
        self.stats = AckStats()
        self._during_ack = during_ack
        self.on_close: Callable[[], None] | None = None
        self.held: list[Any] = []
        self.acquired_at = 0.0
        # Reentrant: close() settles held records under it.
        self._calls = threading.RLock()
        self._config = config
        self._topics = topics
        self._sign_in = SignInWatch()
        self._consumer: ShareConsumer | None = ShareConsumer(
            {**config, "error_cb": self._sign_in}
        )
        self._consumer.set_acknowledgement_commit_callback(self.stats.on_commit_callback)
        self._consumer.subscribe(list(topics))
        self._hook = SigtermHook(self.close)
        self._hook.install()

    @property
    def closed(self) -> bool:
        """Whether the consumer has been closed."""
        return self._consumer is None

    def _live(self) -> ShareConsumer:
        if self._consumer is None:
            raise SessionClosed("the share consumer of the kafka-share source is closed")
        return self._consumer

    def poll(self, timeout_ms: int) -> list[Any]:
        """Poll once; the records returned become :attr:`held` until acknowledged.

        Raises:
            KafkaAccessError: the brokers refused the sign-in, the group or a topic.
        """
        # Busy until the records are held, so a SIGTERM meanwhile RELEASEs them.
        with self._calls, self._hook.busy():
            if self.held:
                raise RuntimeError("the records of the previous poll are not acknowledged yet")
            # Checked before the poll, whose records would otherwise stay locked unheld: the
            # refusals arrive during polls, so a lasting one fails the next.
            self._sign_in.raise_refusal(self._config)
            try:
                messages = self._live().poll(timeout_ms / 1000.0)
            except KafkaException as error:
                refused = access_error(error.args[0], self._config, self._topics)
                if refused is not None:
                    raise refused from None
                raise
            if messages:
                self._sign_in.clear()
            self.acquired_at = time.monotonic()
            self.held = self._usable(messages)
            return self.held

    @staticmethod
    def _usable(messages: Iterable[Any]) -> list[Any]:
        records = []
        for message in messages:
            error = message.error()
            if error is None:
                records.append(message)
            elif error.fatal():
                raise KafkaException(error)
            else:
                log.warning("share consumer error: %s", error)
        return records

    def settle(
        self, ack_type: AcknowledgeType, reject: Collection[tuple[str, int, int]] = frozenset()
    ) -> None:
        """Acknowledge every held record with ``ack_type``, but REJECT those whose
        ``(topic, partition, offset)`` is in ``reject``, and commit synchronously."""
        with self._calls:
            self._settle(ack_type, reject)

    def settle_journaled(self, journaled: int) -> None:
        """ACCEPT the first ``journaled`` held records, RELEASE the rest (none made it into
        the journal, so the broker may hand them out again), and commit."""
        with self._calls:
            kept, left = self.held[:journaled], self.held[journaled:]
            self.held = kept
            if kept:
                self._settle(ACCEPT)
            self.held = left
            if left:
                self._settle(RELEASE)

    def _settle(
        self, ack_type: AcknowledgeType, reject: Collection[tuple[str, int, int]] = frozenset()
    ) -> None:
        # Busy throughout: a SIGTERM handled mid-loop would RELEASE records just ACCEPTed.
        with self._hook.busy():
            self._acknowledge_held(ack_type, reject)

    def _acknowledge_held(
        self, ack_type: AcknowledgeType, reject: Collection[tuple[str, int, int]]
    ) -> None:
        consumer = self._live()
        acknowledge = consumer.acknowledge
        # With the crash point armed, half the batch is acknowledged and committed first, so a
        # crash leaves the batch partly settled.
        crash_after = len(self.held) // 2 if faults.armed(self._during_ack) else -1
        rejected_before = self.stats.rejected
        for index, message in enumerate(self.held):
            if index == crash_after:
                consumer.commit_sync()
                faults.maybe_crash(self._during_ack)
            kind = ack_type
            # Tested only when the pipeline refuses into the broker's queue: a tuple per
            # record would cost every other pipeline's hot loop.
            if reject and (message.topic(), message.partition(), message.offset()) in reject:
                kind = REJECT
                self.stats.rejected += 1
            try:
                acknowledge(message, kind)
            except (IllegalStateException, KafkaException) as error:
                # The record is no longer in flight (its session was lost): it will be redelivered.
                self.stats.on_refused_locally(
                    message.topic(), message.partition(), message.offset(), error
                )
        if ack_type == ACCEPT:
            self.stats.accepted += len(self.held) - (self.stats.rejected - rejected_before)
        else:
            self.stats.released += len(self.held)
        self.held = []
        self.stats.on_commit_result(consumer.commit_sync())

    def close(self) -> None:
        """RELEASE held records, commit pending acknowledgements and leave the share group
        (after the call in progress in another thread, if any)."""
        with self._calls, self._hook.busy():
            consumer = self._consumer
            if consumer is None:
                return
            try:
                if self.held:
                    self._settle(RELEASE)
            finally:
                # Even when the RELEASE failed: leaving the group hands the records back now
                # rather than when their locks expire.
                self._consumer = None
                self._hook.uninstall()
                consumer.close()
                log.info("kafka-share consumer closed: %s", self.stats)
                if self.on_close is not None:
                    self.on_close()
