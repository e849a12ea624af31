"""What delta-rs accepts, checked before it is asked: table URIs, and Arrow batches converted
to the types Delta stores.

delta-rs casts a batch to the table's types itself, and a value that does not fit (an unsigned
64-bit integer beyond the signed range Delta has, text that is no number) ends in a Rust panic
that Python sees as a ``BaseException``, or in a bare ``Exception``. Cast here, the same value is
a :class:`~kafka_share_eos.errors.ValueNotStorableError` naming the column: an error about the
row, which dead-letter policies find by bisection.
"""

from __future__ import annotations

import functools
import re
from urllib.parse import urlsplit

import pyarrow as pa

from kafka_share_eos._libs import deltalake
from kafka_share_eos.errors import ConfigurationError, ValueNotStorableError

# Delta has no unsigned integers: each is stored in the signed type that holds all its values
# (delta-rs itself would keep the width, turning uint8 200 into a panic), uint64 in int64.
_SIGNED_HOLDING = {
    pa.uint8(): pa.int16(),
    pa.uint16(): pa.int32(),
    pa.uint32(): pa.int64(),
    pa.uint64(): pa.int64(),
    pa.float16(): pa.float32(),
}


def storable(rows: pa.Table, target: pa.Schema | None = None, *, where: str = "Delta") -> pa.Table:
    """``rows`` in types a Delta table stores: cast to ``target``'s type for each column it has,
    otherwise to the type Delta stores the column's values in.

    Nanosecond timestamps (from pandas) become the microseconds Delta keeps, as delta-rs does.

    Raises:
        ValueNotStorableError: a value does not fit its column's type in ``where`` (an
            overflow, text that does not parse); the row is at fault.
    """
    columns, fields = [], []
    for field, column in zip(rows.schema, rows.columns, strict=True):
        wanted = _stored_type(field.type, None if target is None else _type_of(target, field.name))
        if wanted is not None and wanted != field.type:
            try:
                column = column.cast(wanted, safe=not pa.types.is_timestamp(wanted))
            except (pa.ArrowNotImplementedError, pa.ArrowTypeError):
                # No Arrow cast between the two: delta-rs has its own, let it decide.
                wanted = field.type
            except pa.ArrowInvalid as error:
                raise ValueNotStorableError(
                    f"column {field.name!r} ({field.type}) does not fit {wanted} in {where}: "
                    f"{error}"
                ) from error
            field = field.with_type(wanted)
        columns.append(column)
        fields.append(field)
    schema = pa.schema(fields, metadata=rows.schema.metadata)
    return rows if schema.equals(rows.schema) else pa.table(columns, schema=schema)


def _type_of(schema: pa.Schema, name: str) -> pa.DataType | None:
    index = schema.get_field_index(name)
    return None if index < 0 else schema.field(index).type


def _stored_type(given: pa.DataType, target: pa.DataType | None) -> pa.DataType | None:
    if target is not None:
        return target
    if pa.types.is_timestamp(given) and given.unit == "ns":
        return pa.timestamp("us", given.tz)
    return _SIGNED_HOLDING.get(given)


def check_delta_uri(uri: str, what: str) -> None:
    """Refuse a table URI whose scheme delta-rs has no store for, when the object is built
    rather than at its first batch (delta-rs names the schemes it knows only when asked to
    open one).

    Raises:
        ConfigurationError: ``uri``'s scheme is not one delta-rs knows.
    """
    scheme = urlsplit(uri).scheme.lower()
    known = _known_schemes()
    if len(scheme) > 1 and known and scheme not in known:  # one letter: a Windows drive
        raise ConfigurationError(
            f"{what} {uri!r}: delta-rs has no store for scheme {scheme!r}; give a local path "
            f"or one of {', '.join(sorted(s for s in known if '+' not in s))}"
        )


@functools.cache
def _known_schemes() -> frozenset[str]:
    try:
        deltalake.DeltaTable("kafka-share-eos-unknown://probe")
    except Exception as error:
        listed = re.search(r"Known schemes: ([\w+,.-]+)", str(error))
        if listed:
            return frozenset(listed.group(1).split(","))
    return frozenset()


def table_schema(table: deltalake.DeltaTable) -> pa.Schema:
    """The table's columns as an Arrow schema."""
    return pa.schema(table.schema().to_arrow())


def appendable(rows: pa.Table, schema: pa.Schema) -> pa.Table | None:
    """``rows`` with exactly ``schema``'s columns and types (missing nullable columns null), or
    None when they do not convert losslessly: rows a plain append can write, where a MERGE would
    cast what an append cannot."""
    columns = []
    for field in schema:
        if field.name in rows.column_names:
            try:
                columns.append(rows[field.name].cast(field.type, safe=True))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
                return None
        elif field.nullable:
            columns.append(pa.nulls(rows.num_rows, field.type))
        else:
            return None
    return pa.table(columns, schema=schema)
