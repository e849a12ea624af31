"""The version of every format the toolkit leaves behind for a later run to read.

Journals, leases, metrics, two-phase decisions and manifests, ledger tables and progress markers
outlive the process that wrote them, and may be read by a later (or, in a botched upgrade, an
earlier) release. Each carries the version of its format: a JSON field :data:`FIELD`, the
schema metadata key :data:`SCHEMA_KEY` of a journal segment, the table property
:data:`TABLE_PROPERTY` of a ledger. One written before formats were versioned carries none
and is version 1. A reader refuses a version above the one it knows with
:class:`~kafka_share_eos.errors.UnsupportedFormatError` rather than guess at its meaning.

This module imports only :mod:`kafka_share_eos.errors`: every module that writes a durable file
may import it.
"""

from __future__ import annotations

from kafka_share_eos.errors import UnsupportedFormatError

FIELD = "format"
"""The field of a JSON file or record that holds its format version."""
SCHEMA_KEY = b"kafka_share_eos.format"
"""The Arrow schema metadata key that holds a journal segment's format version."""
TABLE_PROPERTY = "kafka_share_eos.format"
"""The Delta table property that holds a ledger table's format version."""

# What this release writes and the highest version it reads, per format. A change a reader of
# the current version would misread raises its format's number; one it would read right
# (a field it ignores) does not.
JOURNAL_SEGMENT = 1
LEASE = 1
BATCH_METRICS = 1
DECISION = 1
STAGING_MANIFEST = 1
LEDGER_TABLE = 1
PROGRESS_MARKER = 1

UNVERSIONED = 1
"""The version of a file written before formats carried one."""


def check_format(what: str, found: object, supported: int, where: str) -> int:
    """The version ``found`` in ``what`` at ``where`` (None: none recorded, so version 1),
    if this code reads it: versions 1 to ``supported``.

    Raises:
        UnsupportedFormatError: ``found`` is above ``supported``, or is no version number.
    """
    if found is None:
        return UNVERSIONED
    text = found.decode(errors="replace") if isinstance(found, bytes) else str(found)
    version = int(text) if text.isdigit() else None
    if version is not None and 1 <= version <= supported:
        return version
    readable = "1" if supported == 1 else f"1 to {supported}"
    wanted = f"a version that reads format {text}" if version is not None else "a newer version"
    raise UnsupportedFormatError(
        f"{what} at {where} is in format {text!r}, and this version of kafka-share-eos reads "
        f"format {readable}: upgrade kafka-share-eos to {wanted}, or go on running the "
        "version that wrote it (this one cannot read it)"
    )
