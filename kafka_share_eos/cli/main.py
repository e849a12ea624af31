"""Entry point of the ``kafka-share-eos`` command: one sub-command per module."""

from __future__ import annotations

import typer

from kafka_share_eos.cli.bench import bench
from kafka_share_eos.cli.broker import broker
from kafka_share_eos.cli.dedup import dedup
from kafka_share_eos.cli.doctor import doctor
from kafka_share_eos.cli.group import Commands
from kafka_share_eos.cli.kafka_tool import kafka_tool
from kafka_share_eos.cli.soak import soak
from kafka_share_eos.cli.status import status
from kafka_share_eos.cli.twophase import twophase
from kafka_share_eos.cli.verify import verify
from kafka_share_eos.proving_ground.demo import demo

app = typer.Typer(
    name="kafka-share-eos",
    help="Exactly-once effects for PySpark pipelines on Kafka share groups.",
    no_args_is_help=True,
    add_completion=False,
    cls=Commands,
    # A failure on the user's side is one or two lines (Commands), any other a defect whose
    # plain traceback is what its report needs.
    pretty_exceptions_enable=False,
)
app.command(name="bench")(bench)
app.command(name="broker")(broker)
app.command(name="demo")(demo)
app.command(name="doctor")(doctor)
app.command(
    name="kafka-tool",
    # Everything after the tool's name is the tool's, its --help included.
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True,
                      "allow_interspersed_args": False},
)(kafka_tool)
app.command(name="soak")(soak)
app.command(name="status")(status)
app.command(name="verify")(verify)
app.add_typer(dedup, name="dedup")
app.add_typer(twophase, name="twophase")


@app.callback()
def main() -> None:
    """Exactly-once effects for PySpark pipelines on Kafka share groups."""


def run() -> None:
    """The console script: a failure on the user's side ends it in one or two lines with the
    exit code of its kind (:mod:`kafka_share_eos.cli.errors`), never a traceback."""
    app()


if __name__ == "__main__":
    run()
