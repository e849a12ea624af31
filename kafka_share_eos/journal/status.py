"""What a pipeline's journal says about it: batches journaled, settled and pending.

Read-only: inspecting a journal (running or stopped) never creates, changes or deletes a file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from kafka_share_eos.errors import LocationNotFoundError
from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.journal.segments import Journal, is_journal_name


@dataclass(frozen=True)
class Segment:
    """One journal segment present: its sequence, its rows, and whether its batch is settled."""

    seq: int
    rows: int
    settled: bool


@dataclass(frozen=True)
class Totals:
    """Sums over the metrics entries kept (the newest 1000 batches by default)."""

    batches: int
    records: int
    redelivered: int
    acknowledged: int
    ack_failures: int
    max_lock_budget_used: float


@dataclass(frozen=True)
class JournalStatus:
    """The state of one journal.

    Attributes:
        location: the journal's location as given.
        segments: segments present, ascending. A settled one belongs to a batch whose records
            were ACCEPTed (afterJournal batches until Spark commits them); an unsettled one is
            *pending*: journaled, not yet acknowledged (or left by a runner that died).
        batches: metrics entries of settled batches, oldest first.
        dead_letters: records in the dead-letter sink, when one was given.
    """

    location: str
    segments: tuple[Segment, ...]
    batches: tuple[BatchMetrics, ...]
    dead_letters: int | None = None

    @property
    def pending(self) -> list[int]:
        """Sequences of the segments whose batch is not settled."""
        return [s.seq for s in self.segments if not s.settled]

    @property
    def consumers(self) -> list[dict[str, int]]:
        """Records per consumer slot over :attr:`batches`, ``[{"slot": s, "records": n}]``:
        how the work spread (a runner's single consumer is slot 0)."""
        per_slot: dict[int, int] = {}
        for batch in self.batches:
            for entry in batch.consumers or [{"slot": 0, "records": batch.records}]:
                per_slot[entry["slot"]] = per_slot.get(entry["slot"], 0) + entry["records"]
        return [{"slot": slot, "records": n} for slot, n in sorted(per_slot.items())]

    @property
    def members(self) -> dict[str, int]:
        """Records per share-group member over :attr:`batches`: each executor consumer by its
        lease name, every batch of the runner's single consumer under ``"runner"``. On Apache
        Kafka several members may take records from one partition."""
        per_member: dict[str, int] = {}
        for batch in self.batches:
            for entry in batch.consumers or [{"member": RUNNER_MEMBER, "records": batch.records}]:
                member = str(entry.get("member", RUNNER_MEMBER))
                per_member[member] = per_member.get(member, 0) + int(entry["records"])
        return per_member

    @property
    def totals(self) -> Totals:
        """Sums over :attr:`batches`."""
        b = self.batches
        return Totals(
            batches=len(b),
            records=sum(m.records for m in b),
            redelivered=sum(m.redelivered for m in b),
            acknowledged=sum(m.acknowledged for m in b),
            ack_failures=sum(m.ack_failures for m in b),
            max_lock_budget_used=max((m.lock_budget_used for m in b), default=0.0),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (what ``kafka-share-eos status --json`` prints)."""
        return {
            "journal": self.location,
            "journaled": len(self.segments),
            "segments": [dataclasses.asdict(s) for s in self.segments],
            "acknowledged": len(self.batches),
            "pending": self.pending,
            "totals": dataclasses.asdict(self.totals),
            "consumers": self.consumers,
            "members": self.members,
            "last_batch": dataclasses.asdict(self.batches[-1]) if self.batches else None,
            "dead_letters": self.dead_letters,
        }


RUNNER_MEMBER = "runner"


def inspect_journal(journal: Journal) -> JournalStatus:
    """What ``journal`` holds (its :attr:`JournalStatus.dead_letters` unknown), read without
    creating anything: on an object store not even the check of its conditional writes, so
    credentials that only let read are enough.

    Raises:
        LocationNotFoundError: no journal directory where ``journal`` is.
        JournalError: a segment is damaged (truncated, empty, another schema, unreadable).
    """
    try:
        journal.where.open_existing()
    except LocationNotFoundError as error:
        raise LocationNotFoundError(f"no journal at {journal.location!r}") from error
    reader = Journal(journal.where, create=False)
    _require_journal(reader)
    batches = tuple(reader.metrics(create=False).read_all())
    rows: dict[int, int] = {}
    for seq, slot in reader.entries():
        # None: purged by the running query since the listing, or a slot still being written.
        table = reader.read_present(seq, slot)
        if table is not None:
            rows[seq] = rows.get(seq, 0) + table.num_rows
    segments = [Segment(seq, n, _settled(seq, batches)) for seq, n in sorted(rows.items())]
    return JournalStatus(reader.location, tuple(segments), batches)


def _require_journal(journal: Journal) -> None:
    """Refuse a directory that holds something, none of it a journal's: a Spark checkpoint
    given for the journal would otherwise read as a journal with nothing in it."""
    names = journal.names()
    if not names or any(is_journal_name(name) for name in names):
        return
    if {"offsets", "commits"} <= set(names):
        raise LocationNotFoundError(
            f"{journal.location!r} is a Spark checkpoint, not a journal: give the stream's "
            "journalPath option, not its checkpointLocation")
    shown = ", ".join(sorted(names)[:5]) + (", ..." if len(names) > 5 else "")
    raise LocationNotFoundError(
        f"no journal at {journal.location!r}: it holds {shown}, and a journal holds segments "
        "(<seq>.arrow) and its _metrics, _leases and _rejections folders")


def _settled(seq: int, batches: tuple[BatchMetrics, ...]) -> bool:
    return any(m.first_seq <= seq <= m.seq for m in batches)
