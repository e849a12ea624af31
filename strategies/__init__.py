"""Strategies for ``writeStream.foreachBatch(strategy)`` that turn redeliveries into exactly-once effects."""
