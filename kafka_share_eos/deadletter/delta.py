"""Dead letters in a Delta table, one row per record."""

from __future__ import annotations

import time
from collections.abc import Mapping

import pyarrow as pa

from kafka_share_eos._libs import deltalake
from kafka_share_eos.deadletter.letters import DEAD_LETTER_SCHEMA, first_per_record
from kafka_share_eos.deadletter.sink import DeadLetterSink
from kafka_share_eos.delta.conflicts import describe_winners, lost_to_others
from kafka_share_eos.delta.handles import KeptTable
from kafka_share_eos.errors import CommitConflictError
from kafka_share_eos.sinks.target_checks import check_delta_table

_ATTEMPTS = 5
# Pause before the second attempt, doubled on each further one: a compaction, and the vacuum
# after it, land several commits in a row, and retrying at once loses to each of them.
_BACKOFF_SECONDS = 0.1


class DeltaDeadLetters(DeadLetterSink):
    """Dead letters in the Delta table at ``table_uri`` (created when missing).

    Letters are MERGEd on ``letter_id``, inserted only when not yet there, so a replayed batch
    adds nothing. delta-rs must run in the Spark driver: strategies write letters there.

    Args:
        table_uri: a local path or an object-store URI delta-rs supports.
        storage_options: passed unchanged to delta-rs.

    Raises:
        MissingExtraError: deltalake is not installed.
    """

    def __init__(self, table_uri: str, *, storage_options: Mapping[str, str] | None = None) -> None:
        self.location = KeptTable(str(table_uri), storage_options)

    @property
    def target(self) -> str:
        return f"delta:{self.location.uri}"

    def check_target(self) -> None:
        """Check, before any record is read, that the location holds a Delta table or
        nothing yet.

        Raises:
            TargetTableError: a file, or a directory of other files, is there.
        """
        check_delta_table(self.location)

    def write(self, letters: pa.Table) -> int:
        """MERGE ``letters`` in on ``letter_id``; return how many were new.

        Raises:
            CommitConflictError: other writers (pipelines, compactions, vacuums) changed the
                table under every attempt; it names their commits.
        """
        letters = first_per_record(letters.cast(DEAD_LETTER_SCHEMA))
        if letters.num_rows == 0:
            return 0
        delay = _BACKOFF_SECONDS
        for attempt in range(_ATTEMPTS):
            table = self.location.table()
            try:
                if table is None:
                    deltalake.write_deltalake(
                        self.location.uri, letters, mode="append",
                        storage_options=self.location.options(),
                    )
                    return int(letters.num_rows)
                metrics = (
                    table.merge(letters, "t.letter_id = s.letter_id", source_alias="s",
                                target_alias="t")
                    .when_not_matched_insert_all()
                    .execute()
                )
                return int(metrics.get("num_target_rows_inserted", 0))
            except Exception as error:
                # Another pipeline committed (or created the table) first, or a VACUUM deleted
                # a file the MERGE read: MERGE again on top.
                if not lost_to_others(error):
                    raise
                seen = None if table is None else table.version()
                self.location.forget()
                if attempt == _ATTEMPTS - 1:
                    raise CommitConflictError(
                        f"dead letters could not be written to Delta table "
                        f"{self.location.uri!r}: concurrent writers won {_ATTEMPTS} commit "
                        f"attempts in a row (pipelines, compactions or vacuums); "
                        f"{describe_winners(self.location, seen, error)}; last error: {error}"
                    ) from error
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")

    def read(self) -> pa.Table:
        table = self.location.table()
        if table is None:
            return DEAD_LETTER_SCHEMA.empty_table()
        # QueryBuilder rather than to_pyarrow_table(): the latter can abort at exit in a
        # process that also wrote Delta.
        result = pa.table(deltalake.QueryBuilder().register("letters", table).execute(
            "SELECT * FROM letters ORDER BY dead_lettered_at, letter_id"
        ))
        return result.select(DEAD_LETTER_SCHEMA.names).cast(DEAD_LETTER_SCHEMA)
