"""The result tables of ``verify``, ``bench`` and ``status`` at 80 columns, on a terminal and
piped to a file: every header and every name whole, no line wider than the width."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console, RenderableType

from kafka_share_eos.cli import status as status_command
from kafka_share_eos.cli.bench import BENCH_COLUMNS
from kafka_share_eos.cli.tables import Column, fitted
from kafka_share_eos.cli.verify_table import COLUMNS, render
from kafka_share_eos.journal import JournalStatus
from kafka_share_eos.journal.metrics import BatchMetrics
from kafka_share_eos.journal.status import Segment
from kafka_share_eos.proving_ground.verify.matrix import CellResult, MatrixResult

CELLS = [("upsert-delta-spark", "2pc.postgres.before_prepare"),
         ("dedup-kafka-topic", "connect.worker-kill")]


def shown(renderable: RenderableType, width: int, *, terminal: bool) -> str:
    out = io.StringIO()
    Console(file=out, width=width, force_terminal=terminal, color_system=None).print(renderable)
    return out.getvalue()


def assert_whole(text: str, width: int, words: list[str]) -> None:
    assert "…" not in text
    assert [line for line in text.splitlines() if len(line) > width] == []
    # In a file a block is read as text: no line carries padding.
    assert [line for line in text.splitlines() if line.endswith(", ")] == []
    found = set(re.split(r"[\s│┃|,·()]+", text))
    assert set(words) <= found, set(words) - found


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "piped"])
@pytest.mark.parametrize("width", [80, 120, 250])
def test_verify_results_keep_every_header_and_name_whole(width: int, terminal: bool) -> None:
    result = MatrixResult([CellResult(target, point) for target, point in CELLS], seconds=12)
    text = shown(render(result, width), width, terminal=terminal)
    # A block leaves out the key columns' headers and the columns without a value.
    shown_headers = [column.header for column in COLUMNS[2:]
                     if column.header not in {"consumers with records", "applications applying",
                                              "members with records", "s/crash cycle",
                                              "stall s"}]
    words = [word for header in shown_headers for word in header.split()]
    assert_whole(text, width, words + [name for cell in CELLS for name in cell] + ["never", "hit"])


def test_verify_results_are_a_table_where_they_fit() -> None:
    result = MatrixResult([CellResult(*CELLS[0])], seconds=1)
    assert "┃ strategy" in shown(render(result, 250), 250, terminal=False)
    assert "┃" not in shown(render(result, 80), 80, terminal=False)


def test_bench_rows_keep_their_names_at_80_columns() -> None:
    rows = [["two-phase commit", "exactly-once upsert through prepared transactions vs plain",
             "0.83x", "≥ 0.9x", "no", "measured alone on a loaded machine, its profile in "
             "docs/results/connect-profile.md"]]
    text = shown(fitted(BENCH_COLUMNS, rows, 80, keys=2, title="bench"), 80, terminal=False)
    assert_whole(text, 80, ["two-phase", "commit", "0.83x", "docs/results/connect-profile.md",
                            "measured", "target", "met", "detail"])


def test_a_table_that_fits_wraps_headers_at_spaces_only() -> None:
    columns = (Column("redeliveries absorbed", "right"), Column("consumers with records"))
    text = shown(fitted(columns, [["3", "1"]], 40, keys=1), 40, terminal=False)
    assert_whole(text, 40, ["redeliveries", "absorbed", "consumers", "with", "records"])
    assert "┃" in text


def test_status_names_journal_sequences_not_batch_ids() -> None:
    metrics = BatchMetrics(
        seq=7, first_seq=5, records=20, redelivered=2, acknowledged=20, ack_failures=0,
        ack_failed_partitions=0, lock_held_ms=5.0, lock_budget_used=0.01,
        ack_policy="afterJournal", planned_at="2026-01-01T00:00:00+00:00",
        settled_at="2026-01-01T00:00:01+00:00",
        consumers=[{"slot": 0, "records": 20, "member": "executor-consumer-0-long-lease-name"}],
    )
    journal = JournalStatus("/data/orders/journal", (Segment(8, 3, False),), (metrics,), 2)
    out = io.StringIO()
    status_command.render(journal, Console(file=out, width=80, color_system=None))
    text = out.getvalue()
    assert_whole(text, 80, ["executor-consumer-0-long-lease-name", "2026-01-01T00:00:01+00:00"])
    flat = " ".join(text.split())
    assert "last settled batch" in flat and "journal sequences 5-7 (afterJournal" in flat
    assert "journal sequence" in flat and "last batch" not in flat
    assert "batch metrics (1 batch kept)" in flat
