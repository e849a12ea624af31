"""Dead letters in the share group's own dead-letter queue on the brokers (KIP-1191, Kafka 4.4).

The broker writes a record to the group's DLQ topic when the consumer holding it REJECTs it.
Only the source's consumer holds a batch's records, and it acknowledges them after the batch
committed, so this sink does not write letters anywhere itself: it records the refused
records' coordinates beside the source's journal
(:class:`~kafka_share_eos.journal.rejections.RecordRejections`) before the batch commits,
and the source REJECTs them instead of ACCEPTing them.

The broker's DLQ record carries the record's topic, partition, offset, group and delivery count
in ``__dlq.errors.*`` headers, its message one of two fixed texts ("Offset rejected by
client."), and the key and value only with ``errors.deadletterqueue.copy.record.enable``. A
REJECT carries no reason, so the strategy's reason (stage, error, the row) can go to a second,
toolkit sink, ``reasons``, keyed like the DLQ record by the record's coordinates.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA
from kafka_share_eos.deadletter.open import open_dead_letters
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.journal import Journal
from kafka_share_eos.sharegroup.dead_letter_queue import prepare_dead_letter_queue
from kafka_share_eos.sinks.target_checks import check_targets
from kafka_share_eos.storage import Location


class BrokerDeadLetters(DeadLetterSink):
    """Refused records REJECTed into the share group's dead-letter topic on the brokers.

    Pass it as a strategy's ``dead_letters=`` in a pipeline whose source acknowledges after
    the commit (``acknowledge=afterCommit``, the default, with one consumer): the source REJECTs
    what the strategy refused, so the broker writes each refused record to the topic once.

    Args:
        journal_path: the source's ``journalPath``: the decisions are kept there.
        config: the source's Kafka client settings as confluent-kafka spells them:
            ``bootstrap.servers``, ``group.id`` (the share group) and any security settings.
        topic: set the group's ``errors.deadletterqueue.topic.name`` to it; by default the
            group must have one already.
        copy_records: set the group's ``errors.deadletterqueue.copy.record.enable`` (whether
            the DLQ record holds the key and value); by default the group's setting stays.
        reasons: a toolkit dead-letter sink (or its URI) that also gets every letter, with the
            strategy's reason the broker cannot carry.
        storage_options: the journal store's settings (the source's ``storage.*`` options).

    Raises:
        ConfigurationError: no ``bootstrap.servers`` or ``group.id``; the embedded broker; a
            cluster without ``share.version`` 2 (Kafka 4.4); a group without a dead-letter topic,
            or a topic the brokers would not write to. The message names the fix.
        GroupConfigError: the brokers did not answer the admin requests.
    """

    def __init__(
        self,
        journal_path: str,
        config: Mapping[str, Any],
        *,
        topic: str | None = None,
        copy_records: bool | None = None,
        reasons: DeadLetterSink | str | None = None,
        storage_options: Mapping[str, str] | None = None,
    ) -> None:
        missing = [key for key in ("bootstrap.servers", "group.id") if key not in config]
        if missing:
            raise ConfigurationError(f"BrokerDeadLetters config needs {', '.join(missing)}")
        self.topic = prepare_dead_letter_queue(config, topic, copy_records)
        self.rejections = Journal(Location(journal_path, dict(storage_options or {}))).rejections
        self.rejections.route_here()
        self.reasons = open_dead_letters(reasons) if isinstance(reasons, str) else reasons

    @property
    def target(self) -> str:
        return f"kafka-dlq:{self.topic}"

    def write(self, letters: pa.Table) -> int:
        """Give ``letters`` to ``reasons`` (if any), then record their records as to be
        REJECTed; return how many records were new.

        Raises:
            ConfigurationError: a letter without its record's coordinates (a transform dropped
                ``topic``, ``partition`` or ``offset``): no REJECT could name its record; or
                ``journal_path`` is not the source's journal.
        """
        if letters.num_rows == 0:
            return 0
        # Reasons first: a crash between the two writes leaves a reason whose REJECT the
        # replayed batch records again, never a REJECT without its reason.
        if self.reasons is not None:
            self.reasons.write(letters)
        rows = letters.select(["topic", "partition", "offset", "batch_id"]).to_pylist()
        unnamed = [row for row in rows if None in (row["topic"], row["partition"], row["offset"])]
        if unnamed:
            raise ConfigurationError(
                f"{len(unnamed)} dead letter(s) have no topic/partition/offset, so the broker's "
                "dead-letter queue cannot take them: keep those columns in the transform's rows"
            )
        if not self.rejections.beside_a_journal():
            raise ConfigurationError(
                f"BrokerDeadLetters journal_path {self.rejections.journal.uri!r} holds no "
                "journal segment while a batch runs: pass the source's journalPath, or the "
                "source would never see the refusals and would ACCEPT the refused records"
            )
        return self.rejections.add(
            int(rows[0]["batch_id"]),
            [(row["topic"], row["partition"], row["offset"]) for row in rows],
        )

    def read(self) -> pa.Table:
        """The letters of ``reasons`` if given; else one per REJECTed record, naming the DLQ
        topic that holds the broker's record of it."""
        if self.reasons is not None:
            return self.reasons.read()
        now = dt.datetime.now(dt.UTC)
        rows = [
            {"letter_id": f"{topic}/{partition}/{offset}", "topic": topic,
             "partition": partition, "offset": offset, "stage": "refused",
             "error_type": "Rejected", "error": f"REJECTed into dead-letter topic {self.topic}",
             "strategy": "", "batch_id": batch_id, "dead_lettered_at": now}
            for (topic, partition, offset), batch_id in sorted(self.rejections.decided().items())
        ]
        return pa.Table.from_pylist(rows, schema=DEAD_LETTER_SCHEMA)

    def check_target(self) -> None:
        """Check the ``reasons`` sink, if any (the constructor checked the dead-letter topic).

        Raises:
            DatabaseUnreachableError, TargetTableError: as the ``reasons`` sink's check does.
        """
        check_targets([self.reasons])

    def close(self) -> None:
        if self.reasons is not None:
            self.reasons.close()
