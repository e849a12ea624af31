"""``kafka-share-eos kafka-tool``: Kafka's own command-line tools, from the jars the toolkit
fetched to start Kafka, for a machine that has no Kafka distribution."""

from __future__ import annotations

import subprocess
from typing import Annotated

import typer

from kafka_share_eos.proving_ground.launchers.kafka_dist import KAFKA_TOOLS, tool_command


def kafka_tool(
    context: typer.Context,
    name: Annotated[
        str,
        typer.Argument(help=f"The tool, its script's name less kafka- and .sh: "
                       f"{', '.join(KAFKA_TOOLS)}.", show_default=False),
    ],
) -> None:
    """Run one of Apache Kafka's tools (kafka-share-groups.sh and the others) with the
    arguments that follow its name, from the jars `broker --kafka` runs; exits with its status.
    For example: kafka-tool share-groups --bootstrap-server HOST:PORT --describe --group G"""
    done = subprocess.run(tool_command(name, *context.args), check=False)
    raise typer.Exit(done.returncode)
