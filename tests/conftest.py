"""Fixtures of this test suite on top of the ``kafka_share_eos`` pytest plugin."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from kafka_share_eos.testing.postgres import PostgresDatabases, postgres_for_tests


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresDatabases]:
    """A PostgreSQL server for the session (``KSE_TEST_POSTGRES_URL`` to use an existing one)."""
    with postgres_for_tests() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresDatabases) -> Iterator[str]:
    """SQLAlchemy URL of a fresh database, dropped after the test."""
    name = f"kse_{uuid.uuid4().hex[:16]}"
    yield postgres_server.create_database(name)
    postgres_server.drop_database(name)
