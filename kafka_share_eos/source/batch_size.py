"""How many records a micro-batch, a slot and a poll of the ``kafka-share`` source hold.

``maxRecordsPerTrigger`` is a hard cap on every micro-batch, as Spark's ``maxOffsetsPerTrigger``
is. A poll is sized by the client's ``max.poll.records``, a soft bound on Apache Kafka (a share
fetch acquires whole producer batches), so the source cuts polls at the cap and journals the
rest for the next micro-batches (:mod:`~kafka_share_eos.source.pump`,
:mod:`~kafka_share_eos.source.slots`). Under ``acknowledge=afterCommit`` a micro-batch is one
poll, none of whose records may be acknowledged before the batch commits nor left
unacknowledged at the next poll, and librdkafka cannot ask for a poll of at most
``max.poll.records`` records (KIP-1206's ``record_limit`` acquisition): the cap is refused
there.
"""

from __future__ import annotations

from kafka_share_eos.errors import SourceOptionError

DEFAULT_MAX_POLL_RECORDS = 500
"""Kafka's own default for ``max.poll.records``; set explicitly so a poll's size is known."""
DEFAULT_SLOT_POLL_RECORDS = 2000
"""With ``consumers=N`` and no cap, a consumer's share of a batch (one poll): the records a
single runner consumer journals per batch by default (four polls of 500)."""


def check_cap(max_per_trigger: int | None, after_commit: bool, consumers: int) -> None:
    """Refuse ``maxRecordsPerTrigger`` where it could not be a hard cap.

    Raises:
        SourceOptionError: under afterCommit, naming the mode that caps; or below
            ``consumers``, each of which takes a share of it.
    """
    if max_per_trigger is None:
        return
    if after_commit:
        raise SourceOptionError(
            "option 'maxRecordsPerTrigger' caps a micro-batch only with "
            "acknowledge=afterJournal: under afterCommit a micro-batch is one poll, which on "
            "Apache Kafka holds whole producer batches beyond any limit (librdkafka cannot ask "
            "for KIP-1206's record_limit fetch); set acknowledge=afterJournal, or "
            "kafka.max.poll.records for the size a poll aims at"
        )
    if max_per_trigger < consumers:
        raise SourceOptionError(
            f"option 'maxRecordsPerTrigger' ({max_per_trigger}) must be at least 'consumers' "
            f"({consumers}): each consumer takes its share of it in every micro-batch"
        )


def poll_size(max_per_trigger: int | None, client: int | None, consumers: int) -> int:
    """``max.poll.records``: ``kafka.max.poll.records`` (``client``) or the default, never more
    than a batch's cap, nor, with ``consumers`` above 1, than a slot's share of it.

    Under afterCommit a batch is exactly one poll of that size (explicit acknowledgement forbids
    polling again before every record of the last poll is acknowledged); under afterJournal a
    batch spans several polls, and a slot fills its share over one poll or several.
    """
    if consumers > 1:
        if max_per_trigger is None:
            return client or DEFAULT_SLOT_POLL_RECORDS
        share = -(-max_per_trigger // consumers)
        return share if client is None else min(client, share)
    size = client or DEFAULT_MAX_POLL_RECORDS
    return size if max_per_trigger is None else min(size, max_per_trigger)


def slot_share(max_per_trigger: int | None, consumers: int, slot: int, poll: int) -> int:
    """Records slot ``slot`` takes per micro-batch at most: its share of ``max_per_trigger``
    (the shares add up to it exactly, the first slots taking one more when it does not
    divide), or one ``poll`` when there is no cap. A slot beyond ``consumers`` (carried there
    by a run with more) takes nothing more."""
    if slot >= consumers:
        return 0
    if max_per_trigger is None:
        return poll
    share, rest = divmod(max_per_trigger, consumers)
    return share + (1 if slot < rest else 0)
