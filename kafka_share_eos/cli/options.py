"""Command-line options several commands share."""

from __future__ import annotations

from typing import Annotated

import typer

StorageOpt = Annotated[
    list[str],
    typer.Option("--storage-option", "-o", metavar="KEY=VALUE",
                 help="An object store setting, as delta-rs and the source's storage.* "
                 "options take them; repeatable."),
]


def key_values(pairs: list[str], option: str) -> dict[str, str]:
    """Repeated ``KEY=VALUE`` arguments of ``option`` as a dict.

    Raises:
        typer.BadParameter: a pair is not ``KEY=VALUE`` (the message shows what precedes any
            ``=``, never a value, which may be a secret).
    """
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"expected KEY=VALUE, got {key!r}", param_hint=option)
        options[key] = value
    return options


def storage_options(pairs: list[str]) -> dict[str, str] | None:
    """``--storage-option`` pairs as delta-rs' ``storage_options`` (None when there are none).

    Raises:
        typer.BadParameter: a pair is not ``KEY=VALUE``.
    """
    return key_values(pairs, "--storage-option") or None
