"""The records a verification run produces, and how the pipeline turns one into an effect row.

Every record carries a unique ``id`` and an ``amount``: summed by an increment-style effect, a
record applied twice shows as a wrong total; written by an upsert or an append, it shows as a
second write or row. With bad records, a few extra records test the unhappy paths: a null key,
a payload that is not JSON, an oversized value and a poison record that always fails.
"""

from __future__ import annotations

import enum
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

ACCOUNTS = 7
# Well above a normal record, within the producer's default message.max.bytes (1 MB).
OVERSIZED_BYTES = 400_000
POISON_FIELD = "poison"

EFFECT_SCHEMA = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("id", pa.int64()),
        ("account", pa.int32()),
        ("amount", pa.int64()),
        ("valid", pa.bool_()),
    ]
)
"""Columns of the effect rows every strategy applies (identity: topic, partition, offset)."""


class Kind(enum.Enum):
    """What kind of record a produced record is."""

    NORMAL = "normal"
    NULL_KEY = "null-key"
    INVALID_PAYLOAD = "invalid-payload"
    OVERSIZED = "oversized"
    POISON = "poison"


@dataclass(frozen=True)
class PlannedRecord:
    """A record to produce: its id, amount, account and kind."""

    id: int
    account: int
    amount: int
    kind: Kind = Kind.NORMAL

    @property
    def key(self) -> bytes | None:
        """The Kafka key: the id as text, except for the null-key record."""
        return None if self.kind is Kind.NULL_KEY else str(self.id).encode()

    @property
    def value(self) -> bytes:
        """The Kafka value: a JSON payload, or deliberately broken bytes."""
        if self.kind is Kind.INVALID_PAYLOAD:
            return b"\xff{not json"
        payload: dict[str, Any] = {"id": self.id, "account": self.account, "amount": self.amount}
        if self.kind is Kind.OVERSIZED:
            payload["pad"] = "x" * OVERSIZED_BYTES
        if self.kind is Kind.POISON:
            payload[POISON_FIELD] = True
        return json.dumps(payload).encode()

    @property
    def expected_amount(self) -> int:
        """The amount the effect row carries (0 when the payload cannot be read)."""
        return 0 if self.kind is Kind.INVALID_PAYLOAD else self.amount


def plan_records(count: int, seed: int | str, bad_records: bool) -> list[PlannedRecord]:
    """``count`` normal records, plus one of each bad kind when ``bad_records``."""
    rng = random.Random(seed)
    records = [
        PlannedRecord(i, rng.randrange(ACCOUNTS), rng.randrange(1, 1000)) for i in range(count)
    ]
    if bad_records:
        bad = [Kind.NULL_KEY, Kind.INVALID_PAYLOAD, Kind.OVERSIZED, Kind.POISON]
        records += [
            PlannedRecord(count + i, rng.randrange(ACCOUNTS), rng.randrange(1, 1000), kind)
            for i, kind in enumerate(bad)
        ]
        rng.shuffle(records)
    return records


class PoisonRecordError(RuntimeError):
    """Raised by the pipeline's effect for a poison record, on every delivery."""


def effect_rows(batch: pa.Table, poison_fails: bool) -> pa.Table:
    """Effect rows (:data:`EFFECT_SCHEMA`) of a batch of source rows.

    A payload that is not JSON keeps its identity and falls back to the key for its id, with
    ``valid`` false and amount 0, so it is accounted for rather than lost. A poison record raises
    :class:`PoisonRecordError` when ``poison_fails``.
    """
    ids: list[int | None] = []
    accounts: list[int | None] = []
    amounts: list[int] = []
    valid: list[bool] = []
    values: Sequence[bytes | None] = batch["value"].to_pylist()
    keys: Sequence[bytes | None] = batch["key"].to_pylist()
    for row, (key, value) in enumerate(zip(keys, values, strict=True)):
        payload = _payload(value)
        if payload is None:
            ids.append(int(key) if key is not None else None)
            accounts.append(None)
            amounts.append(0)
            valid.append(False)
            continue
        if payload.get(POISON_FIELD) and poison_fails:
            coordinates = (batch["partition"][row].as_py(), batch["offset"][row].as_py())
            raise PoisonRecordError(
                f"poison record id={payload.get('id')} at partition/offset {coordinates}"
            )
        ids.append(int(payload["id"]))
        accounts.append(int(payload["account"]))
        amounts.append(int(payload["amount"]))
        valid.append(True)
    return pa.table(
        {
            "topic": batch["topic"],
            "partition": pc.cast(batch["partition"], pa.int32()),
            "offset": pc.cast(batch["offset"], pa.int64()),
            "id": pa.array(ids, pa.int64()),
            "account": pa.array(accounts, pa.int32()),
            "amount": pa.array(amounts, pa.int64()),
            "valid": pa.array(valid, pa.bool_()),
        },
        schema=EFFECT_SCHEMA,
    )


def produce(
    bootstrap_servers: str, topic: str, records: Sequence[PlannedRecord], partitions: int,
    batch_records: int = 1,
) -> dict[tuple[int, int], PlannedRecord]:
    """Produce ``records`` round-robin over ``partitions``; map ``(partition, offset)`` to each.

    The producer is idempotent, so a retried send cannot add a record the verifier does not
    know about; it is closed on return. Each record is its own record batch: Apache Kafka
    hands a share-group member whole batches, and the members must be able to split one
    partition's records. With ``batch_records`` above 1, every that many records are sent
    together, a record batch per partition, as a busy producer's would be.
    """
    from confluent_kafka import Producer

    placed: dict[tuple[int, int], PlannedRecord] = {}
    failures: list[str] = []

    def delivered(record: PlannedRecord) -> Any:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                failures.append(f"record id={record.id}: {err}")
            else:
                placed[(msg.partition(), msg.offset())] = record

        return report

    producer = Producer({
        "bootstrap.servers": bootstrap_servers, "enable.idempotence": True,
        # Waits for the flush that ends each group of records, which goes out as one batch.
        "linger.ms": 0 if batch_records == 1 else 60_000,
        # Errors only: on a Kafka that just started, the first producer id comes after a few
        # "coordinator load in progress: retrying" warnings, and failures reach the delivery
        # reports anyway.
        "log_level": 3,
    })
    for index, record in enumerate(records):
        producer.produce(topic, key=record.key, value=record.value,
                         partition=index % partitions, on_delivery=delivered(record))
        if (index + 1) % batch_records == 0:
            producer.flush(60)
    remaining = producer.flush(60)
    if failures or remaining:
        raise RuntimeError(
            f"producing to {topic!r} failed: {remaining} undelivered; {'; '.join(failures[:5])}"
        )
    return placed


def _payload(value: bytes | None) -> dict[str, Any] | None:
    if value is None:
        return None
    try:
        payload = json.loads(value)
    except (UnicodeDecodeError, ValueError):
        return None
    return payload if isinstance(payload, dict) and "id" in payload else None
