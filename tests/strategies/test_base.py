"""What every strategy shares: a misspelled keyword is refused, never ignored (a strategy given
``dead_letter=`` would otherwise run with its dead letters off, and the first bad row would fail
the batch); dead letters, batch ids and inputs are checked the same way by every strategy."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from helpers.batches import source_rows

from kafka_share_eos import (
    CheckpointDedupStore,
    ConfigurationError,
    DeltaAppendSink,
    DeltaParticipant,
    FileDecisionLog,
    IdempotentUpsertSink,
    SqlDeadLetters,
    TwoPhaseCommitCoordinator,
)
from kafka_share_eos.strategies import BatchStrategy, as_arrow

Build = Callable[[Path, dict[str, Any]], BatchStrategy]

BUILDERS: dict[str, Build] = {
    "sql": lambda tmp, kw: IdempotentUpsertSink.sql(f"sqlite:///{tmp / 't.db'}", "t",
                                                   create_table=True, **kw),
    "delta": lambda tmp, kw: IdempotentUpsertSink.delta(str(tmp / "delta"), **kw),
    "dedup": lambda tmp, kw: CheckpointDedupStore(
        str(tmp / "ledger"), DeltaAppendSink(str(tmp / "sink")), **kw
    ),
    "two-phase": lambda tmp, kw: TwoPhaseCommitCoordinator(
        FileDecisionLog(str(tmp / "log")), [DeltaParticipant(str(tmp / "effect"))], app_id="app",
        **kw,
    ),
}

MISSPELLED = [
    ("dead_letter", "dead_letters"),
    ("metric_path", "metrics_path"),
    ("keycolumns", "key_columns"),
    ("transfrom", "transform"),
]


@pytest.mark.parametrize("strategy", list(BUILDERS))
@pytest.mark.parametrize(("given", "meant"), MISSPELLED, ids=[m[0] for m in MISSPELLED])
def test_a_misspelled_keyword_names_the_one_meant(
    tmp_path: Path, strategy: str, given: str, meant: str
) -> None:
    with pytest.raises(TypeError, match=f"'{given}'; did you mean '{meant}'"):
        BUILDERS[strategy](tmp_path, {given: object()})


@pytest.mark.parametrize("strategy", list(BUILDERS))
def test_dead_letters_take_a_policy_a_sink_or_its_uri(tmp_path: Path, strategy: str) -> None:
    uri = f"sqlite:///{tmp_path / 'letters.db'}"
    by_uri = BUILDERS[strategy](tmp_path, {"dead_letters": uri})
    assert by_uri.dead_letters is not None
    assert isinstance(by_uri.dead_letters.sink, SqlDeadLetters)
    by_sink = BUILDERS[strategy](tmp_path, {"dead_letters": SqlDeadLetters(uri)})
    assert by_sink.dead_letters is not None
    with pytest.raises(TypeError, match="dead_letters must be"):
        BUILDERS[strategy](tmp_path, {"dead_letters": pa.table({"x": [1]})})


@pytest.mark.parametrize("strategy", list(BUILDERS))
@pytest.mark.parametrize("batch_id", [None, "3", 1.0, True, -1])
def test_a_batch_id_that_is_not_a_non_negative_integer_is_refused(
    tmp_path: Path, strategy: str, batch_id: object
) -> None:
    sink = BUILDERS[strategy](tmp_path, {})
    rows = source_rows(topic="t", partition=0, offset=[0])
    error = ConfigurationError if batch_id == -1 else TypeError
    with pytest.raises(error, match="batch_id"):
        sink.apply(rows, batch_id)  # type: ignore[arg-type]


@pytest.mark.timeout(60)
def test_inputs_arrow_record_batch_and_pandas() -> None:
    table = pa.table({"a": [1, 2]})
    assert as_arrow(table) is table
    assert as_arrow(table.to_batches()[0]).equals(table)
    assert as_arrow(pd.DataFrame({"a": [1, 2]})).equals(table)
    with pytest.raises(TypeError, match="not list"):
        as_arrow([1, 2])
