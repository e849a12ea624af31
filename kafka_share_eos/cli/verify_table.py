"""``kafka-share-eos verify``'s results: one row per strategy and crash point (or fault)."""

from __future__ import annotations

from rich.console import RenderableType

from kafka_share_eos.cli.tables import Column, fitted
from kafka_share_eos.proving_ground.verify.matrix import CellResult, MatrixResult
from kafka_share_eos.proving_ground.verify.outages import OUTAGES
from kafka_share_eos.proving_ground.verify.points import RANDOM_KILL

COLUMNS = (
    Column("strategy"), Column("crash point"), Column("runs", "right"),
    Column("crashes", "right"), Column("records", "right"), Column("duplicates", "right"),
    Column("losses", "right"), Column("dead-lettered", "right"),
    Column("redeliveries absorbed", "right"), Column("consumers with records", "right"),
    Column("applications applying", "right"), Column("members with records", "right"),
    Column("handoffs", "right"), Column("s/crash cycle", "right"), Column("stall s", "right"),
    Column("verdict", wrap=True),
)


def render(result: MatrixResult, width: int | None = None) -> RenderableType:
    """Strategy x crash point (or fault): runs, records, duplicates, losses, redeliveries
    absorbed, and the longest stall a fault caused; as a table when it fits in ``width``
    (any width when None), else one block per cell."""
    rows = []
    for cell in result.cells:
        cell_json = cell.to_json()
        crashes = cell_json["kills"] if cell.point == RANDOM_KILL else cell_json["crashes"]
        cycle = cell_json["mean_crash_cycle_seconds"]
        stall = cell_json["max_stall_seconds"]
        rows.append([
            cell.target, cell.point, str(len(cell.runs)), str(crashes),
            str(cell_json["records"]), str(cell_json["duplicates"]), str(cell_json["losses"]),
            str(cell_json["dead_lettered"]), str(cell_json["redeliveries_absorbed"]),
            _span(cell.consumers_applying()), _span(cell.applications_applying()),
            _span(cell.members_acquiring()), str(cell_json["handoffs"]),
            "" if cycle is None else f"{cycle:.1f}", "" if stall is None else f"{stall:.1f}",
            _verdict(cell),
        ])
    return fitted(COLUMNS, rows, width or 10_000, keys=2,
                  title=f"kafka-share-eos verify ({result.seconds:.0f} s)")


def _verdict(cell: CellResult) -> str:
    if cell.ok:
        return "[green]exactly once[/]"
    if cell.errors:
        return f"[red]error[/] ({len(cell.errors)} runs)"
    if not cell.exercised:
        return ("[yellow]fault never struck[/]" if cell.point in OUTAGES
                else "[yellow]crash point never hit[/]")
    return "[red]NOT exactly once[/]"


def _span(values: list[int]) -> str:
    if not values:
        return ""
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"
