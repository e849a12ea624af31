"""The groups of the command tree (the root, ``dedup``, ``twophase``): they render every
command's help plainly and end every command's failure on the user's side in one or two lines,
never a traceback."""

from __future__ import annotations

from typing import Any, NoReturn

import typer

from kafka_share_eos.cli.errors import GivenFailure, describe
from kafka_share_eos.cli.help_text import Group, tidy


class Commands(Group):
    """A group of commands: ``kafka-share-eos`` itself, ``dedup`` and ``twophase``.

    Every command below it runs inside :meth:`invoke`, so an exception that :func:`describe`
    knows (the toolkit's own, a database's, Kafka's, a store's, a missing extra) becomes its
    lines on stderr and its exit code; any other keeps its traceback, a defect to fix.
    """

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        tidy(self)

    def make_context(self, *args: Any, **extra: Any) -> Any:
        # The group's own options are parsed here, before invoke.
        try:
            return super().make_context(*args, **extra)
        except Exception as error:
            _end(error)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except Exception as error:
            _end(error)


def _end(error: Exception) -> NoReturn:
    """End the command with ``error``'s lines and exit code, or re-raise a defect."""
    failure = describe(error)
    if failure is None:
        raise error
    what = error.what if isinstance(error, GivenFailure) else None
    for line in failure.lines(what):
        typer.echo(line, err=True)
    raise typer.Exit(failure.code) from None
