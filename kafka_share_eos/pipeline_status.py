"""What a pipeline left behind, as ``kafka-share-eos status`` shows it: its source's journal and
the records in its dead-letter sink.

It sits above the journal and the dead-letter sinks because it reads both; each of them knows
nothing of the other.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from kafka_share_eos.deadletter import count_dead_letters
from kafka_share_eos.journal import Journal, JournalStatus, inspect_journal
from kafka_share_eos.storage import Location


def journal_status(
    location: str,
    dead_letters: str | None = None,
    dead_letter_table: str | None = None,
    storage_options: Mapping[str, str] | None = None,
) -> JournalStatus:
    """Inspect the journal at ``location`` (and count the dead letters at ``dead_letters``, in
    table ``dead_letter_table`` of a SQL database: the sinks' default table otherwise).
    ``storage_options`` are the settings of the object store holding it, as the source's
    ``storage.*`` options give them.

    Raises:
        LocationNotFoundError: no journal directory at ``location``, or no dead-letter table
            in the SQL database at ``dead_letters``.
        JournalError: a segment is damaged (truncated, empty, another schema, unreadable).
        StoreUnreachableError: the store holding the journal could not be reached or refused
            access.
        ConfigurationError: ``location`` is a URI of no store pyarrow.fs knows.
    """
    status = inspect_journal(Journal(Location(location, storage_options or {})))
    if dead_letters is None:
        return status
    return dataclasses.replace(status,
                               dead_letters=count_dead_letters(dead_letters, dead_letter_table))
