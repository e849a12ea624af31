"""The ``kafka-share`` data source: what ``spark.readStream.format("kafka-share")`` loads."""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import ClassVar

from kafka_share_eos._extras import SPARK
from kafka_share_eos.journal.schema import DELIVERY_COUNT, DELIVERY_COUNT_LIMIT_KEY, HEADERS
from kafka_share_eos.source.group import delivery_count_limit
from kafka_share_eos.source.options import FORMAT, SourceOptions

with SPARK.needed_by("the kafka-share Spark source"):
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader
    from pyspark.sql.types import (
        ArrayType,
        BinaryType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
        TimestampType,
    )

    from kafka_share_eos.source.reader import KafkaShareStreamReader


class KafkaShareDataSource(DataSource):
    """A streaming source reading a Kafka share group through a durable batch journal.

    Options are validated when the stream is loaded; see ``docs/source.md`` for the reference.
    """

    session_settings: ClassVar[Mapping[str, str] | None] = None
    """The registering session's settings that count its task slots
    (:mod:`~kafka_share_eos.spark_slots`); None when registered without them."""

    def __init__(self, options: MutableMapping[str, str]) -> None:
        super().__init__(options)
        self.source_options = SourceOptions.parse(options)

    @classmethod
    def name(cls) -> str:
        """The format name: ``kafka-share``."""
        return FORMAT

    def schema(self) -> StructType:
        """Spark's Kafka source schema (headers with ``includeHeaders``) + ``deliveryCount``,
        whose metadata carries the share group's delivery limit when the brokers tell it."""
        return spark_schema(self.source_options.include_headers,
                            delivery_count_limit(self.source_options))

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        """The reader planning micro-batches in Spark's source runner."""
        return KafkaShareStreamReader(self.source_options, self.session_settings)


def with_session_settings(settings: Mapping[str, str]) -> type[KafkaShareDataSource]:
    """:class:`KafkaShareDataSource` carrying ``settings`` of the registering session to the
    source's planning, which runs where no session is at hand. The class is made here, so it
    is pickled with them by value; the class itself goes by name, without them."""
    return type(KafkaShareDataSource.__name__, (KafkaShareDataSource,), {
        "session_settings": dict(settings), "__module__": __name__,
        "__doc__": KafkaShareDataSource.__doc__,
    })


def spark_schema(include_headers: bool, delivery_count_limit: int | None = None) -> StructType:
    """The Spark schema of the stream (what ``df.schema`` shows); ``delivery_count_limit``
    becomes the metadata of ``deliveryCount``."""
    fields = [
        StructField("key", BinaryType()),
        StructField("value", BinaryType()),
        StructField("topic", StringType()),
        StructField("partition", IntegerType()),
        StructField("offset", LongType()),
        StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()),
    ]
    if include_headers:
        header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
        fields.append(StructField(HEADERS, ArrayType(header)))
    metadata = ({} if delivery_count_limit is None
                else {DELIVERY_COUNT_LIMIT_KEY: delivery_count_limit})
    fields.append(StructField(DELIVERY_COUNT, IntegerType(), metadata=metadata))
    return StructType(fields)
