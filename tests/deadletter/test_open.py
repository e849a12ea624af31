"""Opening the dead-letter sink a URI names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kafka_share_eos.deadletter import (
    DeadLetterSink,
    DeltaDeadLetters,
    SqlDeadLetters,
    open_dead_letters,
)

pytestmark = pytest.mark.timeout(120)


def test_open_dead_letters_picks_the_sink_by_uri(tmp_path: Path) -> None:
    opened: Callable[[str], DeadLetterSink] = open_dead_letters
    assert isinstance(opened(f"sqlite:///{tmp_path / 'd.db'}"), SqlDeadLetters)
    assert isinstance(opened(str(tmp_path / "delta")), DeltaDeadLetters)
    with pytest.raises(ValueError, match="kafka://host:port/topic"):
        opened("kafka://broker:9092")
