"""The columns every batch must carry, checked on every batch rather than only the first."""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from kafka_share_eos.errors import MissingColumnsError


def require_columns(table: pa.Table, names: Sequence[str], where: str) -> None:
    """Raise when ``table`` lacks one of ``names`` (the key and version columns).

    Raises:
        MissingColumnsError: naming the columns missing and those the batch has.
    """
    missing = [name for name in names if name not in table.column_names]
    if missing:
        raise MissingColumnsError(where, missing, table.column_names)
