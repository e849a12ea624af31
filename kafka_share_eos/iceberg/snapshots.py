"""Snapshot properties that make a commit happen at most once per (application, batch).

Every snapshot the toolkit commits to an Iceberg table carries in its summary:

- ``kafka-share-eos.application``: the application id that committed it;
- ``kafka-share-eos.query``: the streaming query's id (absent outside a streaming query);
- ``kafka-share-eos.batch``: the batch id;
- ``kafka-share-eos.transaction``: the two-phase transaction id, on a participant's commits;
- ``kafka-share-eos.committed.<application id>``: for every application that ever committed
  to the table, the highest batch it committed, as Flink's Iceberg sink carries
  ``flink.max-committed-checkpoint-id``.

The watermarks are carried forward from the newest snapshot the toolkit wrote to each new
one, so the newest such snapshot knows every application's last batch even after the
snapshots that committed them expired. A batch at or below its application's watermark was
committed, whether its commit's answer was lost, the query crashed before Spark recorded it,
or another application committed since.

Each commit also moves the table's tag ``kafka-share-eos`` onto its newest snapshot, in the
same commit. Snapshot expiry keeps every tagged snapshot (pyiceberg's, and Spark's while the
tag has no maximum age), so the watermarks outlive other engines' commits piling up on top
and an expiry of every snapshot but the current one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_share_eos._libs import iceberg_snapshot_updates, iceberg_snapshots

if TYPE_CHECKING:
    from pyiceberg.table import Table, Transaction
    from pyiceberg.table.snapshots import Snapshot

APPLICATION = "kafka-share-eos.application"
QUERY = "kafka-share-eos.query"
BATCH = "kafka-share-eos.batch"
TRANSACTION = "kafka-share-eos.transaction"
WATERMARK_PREFIX = "kafka-share-eos.committed."
TAG = "kafka-share-eos"
"""The tag on the newest snapshot the toolkit committed."""


@dataclass(frozen=True)
class CommitRecord:
    """What a table's newest toolkit snapshot says of the batches committed to it.

    Attributes:
        watermarks: each application's highest committed batch.
        snapshot_id: the snapshot they were read from (None: the toolkit never committed).
    """

    watermarks: Mapping[str, int] = field(default_factory=dict)
    snapshot_id: int | None = None

    def committed(self, application: str) -> int | None:
        """The highest batch ``application`` committed, None if it committed none."""
        return self.watermarks.get(application)

    def properties(self, application: str, batch_id: int, query: str | None,
                   transaction: str | None = None) -> dict[str, str]:
        """The summary properties of a commit of batch ``batch_id`` by ``application`` (in
        two-phase ``transaction``, if given), with every application's watermark carried
        forward."""
        marks = dict(self.watermarks)
        marks[application] = max(batch_id, marks.get(application, batch_id))
        properties = {APPLICATION: application, BATCH: str(batch_id)}
        if query is not None:
            properties[QUERY] = query
        if transaction is not None:
            properties[TRANSACTION] = transaction
        properties.update({f"{WATERMARK_PREFIX}{app}": str(mark) for app, mark in marks.items()})
        return properties


def _toolkit_properties(snapshot: Snapshot) -> dict[str, str] | None:
    summary = snapshot.summary
    if summary is None or APPLICATION not in summary.additional_properties:
        return None
    return summary.additional_properties


def _record(snapshot: Snapshot, properties: Mapping[str, str]) -> CommitRecord:
    marks = {key.removeprefix(WATERMARK_PREFIX): int(value)
             for key, value in properties.items() if key.startswith(WATERMARK_PREFIX)}
    return CommitRecord(marks, snapshot.snapshot_id)


def commit_record(table: Table) -> CommitRecord:
    """The watermarks of the newest snapshot the toolkit committed among the current one and
    its ancestors (another engine's snapshots on top carry none and are walked past), else of
    the snapshot the toolkit's tag holds: the ancestors that led to it may have expired."""
    for snapshot in iceberg_snapshots.ancestors_of(table.current_snapshot(), table.metadata):
        properties = _toolkit_properties(snapshot)
        if properties is not None:
            return _record(snapshot, properties)
    tagged = table.snapshot_by_name(TAG)
    properties = None if tagged is None else _toolkit_properties(tagged)
    if tagged is not None and properties is not None:
        return _record(tagged, properties)
    return CommitRecord()


def commit_marked(transaction: Transaction) -> None:
    """Commit ``transaction``, whose snapshots carry the toolkit's properties, with the tag
    :data:`TAG` moved onto its newest snapshot in the same commit."""
    snapshot = transaction.table_metadata.current_snapshot()
    if snapshot is not None:
        tag = iceberg_snapshot_updates.ManageSnapshots(transaction)
        tag.create_tag(snapshot.snapshot_id, TAG).commit()
    transaction.commit_transaction()


def commits_of(table: Table, application: str) -> list[tuple[int, int]]:
    """``(snapshot id, batch id)`` of each snapshot ``application`` committed that the table
    still holds, oldest first (a transaction that replaced rows commits two or three)."""
    found = []
    for snapshot in table.snapshots():
        properties = _toolkit_properties(snapshot)
        if properties is not None and properties[APPLICATION] == application:
            found.append((snapshot.snapshot_id, int(properties[BATCH])))
    return found


def transaction_snapshot(table: Table, transaction: str) -> Snapshot | None:
    """The snapshot that committed two-phase ``transaction``, while the table still holds it."""
    for snapshot in table.snapshots():
        properties = _toolkit_properties(snapshot)
        if properties is not None and properties.get(TRANSACTION) == transaction:
            return snapshot
    return None
