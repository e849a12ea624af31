"""The ``kafka-share`` data source: what ``spark.readStream.format("kafka-share")`` loads."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import TYPE_CHECKING

from kafka_share_eos._extras import needs_extra
from kafka_share_eos.source.group import delivery_count_limit
from kafka_share_eos.source.options import FORMAT, SourceOptions
from kafka_share_eos.source.schema import spark_schema

with needs_extra("spark", "the kafka-share Spark source"):
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader

    from kafka_share_eos.source.reader import KafkaShareStreamReader

if TYPE_CHECKING:
    from pyspark.sql.types import StructType



class KafkaShareDataSource(DataSource):
    """A streaming source reading a Kafka share group through a durable batch journal.

    Options are validated when the stream is loaded; see ``docs/source.md`` for the reference.
    """

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
        return KafkaShareStreamReader(self.source_options)
