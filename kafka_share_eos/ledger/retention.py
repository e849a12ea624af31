"""Pruning of ledger identities that can no longer come back.

A share-partition never delivers again a record far enough below the highest offset it delivered
(:mod:`kafka_share_eos.sharegroup.redelivery` gives the argument): any identity below
``M - offset_window``, ``M`` the partition's highest applied offset and ``offset_window`` at
least the broker's record locks plus one fetch, is final and can be dropped.

``min_age`` adds a time guard on top (both conditions must hold). It is the only rule available to
business-key ledgers, where it sets how far back duplicates are caught rather than a safety bound.
See docs/checkpoint-dedup.md for the full argument and its assumptions.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kafka_share_eos.delta.predicates import quote_identifier, sql_literal
from kafka_share_eos.errors import ConfigurationError
from kafka_share_eos.ledger.lookup import LedgerLookup
from kafka_share_eos.ledger.rows import (
    APPLIED_AT_COLUMN,
    RECORD_IDENTITY,
    Claimant,
    file_highest_offsets,
)
from kafka_share_eos.sharegroup.redelivery import REDELIVERY_WINDOW


@dataclass(frozen=True)
class RetentionPolicy:
    """Which ledger identities are old enough to drop; an identity goes when every set rule agrees.

    Args:
        offset_window: keep identities whose offset is within this many offsets of the highest
            applied offset of their (topic, partition). Must be at least the broker's
            ``group.share.partition.max.record.locks`` plus the records one fetch may acquire;
            the default leaves ample room above Kafka's defaults (2000 and 500).
            Record identities only.
        min_age: keep identities applied less than this long ago.

    Raises:
        ConfigurationError: neither rule is set (everything would be pruned), or one is
            negative.
    """

    offset_window: int | None = REDELIVERY_WINDOW
    min_age: dt.timedelta | None = dt.timedelta(hours=1)

    def __post_init__(self) -> None:
        if self.offset_window is None and self.min_age is None:
            raise ConfigurationError(
                "RetentionPolicy needs offset_window or min_age, or it prunes all"
            )
        if self.offset_window is not None and self.offset_window < 0:
            raise ConfigurationError(f"offset_window must be >= 0, got {self.offset_window}")
        if self.min_age is not None and self.min_age < dt.timedelta(0):
            raise ConfigurationError(f"min_age must be >= 0, got {self.min_age}")


@dataclass(frozen=True)
class PruneResult:
    """What a prune removed: rows, and the offset below which each partition was pruned."""

    deleted_rows: int
    cutoffs: dict[tuple[str, int], int] = field(default_factory=dict)


def max_offsets(ledger: LedgerLookup) -> dict[tuple[str, int], int]:
    """Highest recorded offset per (topic, partition), read from file statistics only."""
    import pyarrow as pa

    table = ledger.location.table()
    if table is None:
        return {}
    actions = pa.table(table.get_add_actions(flatten=True))
    if actions.num_rows == 0:
        return {}
    if "max.offset" not in actions.column_names:
        raise ConfigurationError(
            f"ledger {ledger.uri} has files without offset statistics; "
            "rewrite them with `kafka-share-eos dedup compact` first"
        )
    return file_highest_offsets(actions)


def offset_cutoffs(
    ledger: Claimant, policy: RetentionPolicy,
    highest: Callable[[], Mapping[tuple[str, int], int]],
) -> dict[tuple[str, int], int]:
    """Per (topic, partition), the offset below which ``policy``'s offset window lets
    identities go, from the ``highest()`` offset of each; partitions with nothing below are
    left out.

    Raises:
        ConfigurationError: the policy has an offset window and the ledger's identity is not
            the record identity.
    """
    if policy.offset_window is None:
        return {}
    if ledger.identity != RECORD_IDENTITY:
        raise ConfigurationError(
            "RetentionPolicy.offset_window applies to the record identity (topic, partition, "
            f"offset) only; this ledger's identity is {ledger.identity}: set offset_window=None"
        )
    return {key: top - policy.offset_window for key, top in highest().items()
            if top - policy.offset_window > 0}


def prune_predicate(
    ledger: LedgerLookup, policy: RetentionPolicy, now: dt.datetime
) -> tuple[str | None, dict[tuple[str, int], int]]:
    """The SQL delete predicate for ``policy`` at time ``now``, and the offset cutoffs it uses."""
    age_rule = None
    if policy.min_age is not None:
        horizon = (now - policy.min_age).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        age_rule = f"{quote_identifier(APPLIED_AT_COLUMN)} < '{horizon}'"
    if policy.offset_window is None:
        return age_rule, {}
    cutoffs = offset_cutoffs(ledger, policy, lambda: max_offsets(ledger))
    if not cutoffs:
        return None, {}
    offset_rule = " OR ".join(
        f'("topic" = {sql_literal(topic)} AND "partition" = {partition}'
        f' AND "offset" < {cutoff})'
        for (topic, partition), cutoff in sorted(cutoffs.items())
    )
    predicate = f"({offset_rule})" if age_rule is None else f"({offset_rule}) AND {age_rule}"
    return predicate, cutoffs


def prune(
    ledger: LedgerLookup, policy: RetentionPolicy, *, now: dt.datetime | None = None
) -> PruneResult:
    """Delete the identities ``policy`` allows to go; the ledger's batch marker is untouched."""
    predicate, cutoffs = prune_predicate(ledger, policy, now or dt.datetime.now(dt.UTC))
    table = ledger.location.table()
    if predicate is None or table is None:
        return PruneResult(0, {})
    metrics = table.delete(predicate)
    return PruneResult(int(metrics.get("num_deleted_rows", 0)), cutoffs)

