"""How ``--help`` reads: flags without a type after them, values named for what they hold,
arguments by name in the usage line, and descriptions that wrap at the terminal's width.

Typer renders every parameter with its Python type (``--json <bool>``, ``--postgres
<list[str]>``), a required argument as ``{ledger}`` in the usage line, and keeps the line
breaks of a docstring, which read ragged at any other width. :func:`tidy` gives every command of a
tree the classes below, which render a flag alone, a value option with its metavar (its name
in capitals unless it names one), and an argument by its metavar, and joins the lines of each
paragraph of a command's description so the terminal wraps them.
"""

from __future__ import annotations

import inspect
from typing import Any

from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption


class Option(TyperOption):
    """An option shown as ``--name METAVAR``, or ``--name`` alone when it is a flag; its range,
    if it has one, is a sentence of its description (:func:`_plain`), where it wraps."""

    def display_type_rich(self, ctx: Any) -> str | None:
        if getattr(self, "is_flag", False) or getattr(self, "count", False):
            return None
        return self.metavar or (self.name or "value").upper()

    def _get_number_range_help_str(self) -> str | None:
        return None


def _range(low: float | None, high: float | None) -> str:
    if low is None:
        return f"At most {high}." if high is not None else ""
    return f"At least {low}." if high is None else f"From {low} to {high}."


class Argument(TyperArgument):
    """An argument shown by its metavar, in capitals, with no type beside it."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


class Command(TyperCommand):
    """A command whose usage line names its arguments as ``NAME`` (``[NAME]`` when optional)
    and whose ``--help`` is a flag like the others."""

    def get_help_option(self, ctx: Any) -> Any:
        return _plain(super().get_help_option(ctx))

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return usage_pieces(self, ctx)


class Group(TyperGroup):
    """A group whose ``--help`` is a flag like the others."""

    def get_help_option(self, ctx: Any) -> Any:
        return _plain(super().get_help_option(ctx))


def usage_pieces(command: Any, ctx: Any) -> list[str]:
    """``[OPTIONS]`` and the arguments of ``command``, as its usage line shows them."""
    pieces = [command.options_metavar] if command.options_metavar else []
    for param in command.get_params(ctx):
        if isinstance(param, TyperArgument):
            name = _metavar(param)
            pieces.append(name if param.required else f"[{name}]")
    return pieces


def _metavar(param: Any) -> str:
    name = str(param.metavar or (param.name or "value").upper())
    return name if param.nargs == 1 else f"{name}..."


def _plain(param: Any) -> Any:
    """``param`` with the class that renders it plainly."""
    if type(param) is TyperOption:
        param.__class__ = Option
        bounds = _range(getattr(param, "min", None), getattr(param, "max", None))
        if bounds:
            param.help = f"{param.help} {bounds}" if param.help else bounds
    elif type(param) is TyperArgument:
        param.__class__ = Argument
        if param.metavar is None:
            param.metavar = (param.name or "value").upper()
    return param


def unwrap(text: str | None) -> str | None:
    """``text`` with the line breaks inside each paragraph joined, paragraphs kept apart; a
    paragraph that starts with ``\\b`` keeps its lines (click's mark for a preformatted one)."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(p if p.startswith("\b") else " ".join(p.split()) for p in paragraphs)


def tidy(command: Any) -> None:
    """Give ``command`` and every command below it the plain rendering of this module."""
    command.help = unwrap(command.help)
    # Typer builds its commands from functions, with classes of its own: the subclasses here
    # change only how they render.
    if type(command) is TyperCommand:
        command.__class__ = Command
    elif type(command) is TyperGroup:
        command.__class__ = Group
    for param in command.params:
        _plain(param)
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            tidy(sub)
