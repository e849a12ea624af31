"""Every ``kafka-share-eos`` command line in the README and the docs is one the command's own
parser accepts, and every option an inline mention names exists on its command: a renamed or
removed option fails here, not in a reader's terminal. Lines are parsed, not run."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import typer
from helpers.doc_blocks import blocks, documents
from typer.core import TyperGroup
from typer.exceptions import TyperException

from kafka_share_eos.cli.main import app

PROGRAM = re.compile(r"^(?:\.venv/bin/)?kafka-share-eos$")
SHELL = {"", "bash", "sh", "console"}
# The words the docs write in capitals where the reader puts a value of their own.
PLACEHOLDERS = {
    "PATH": "{tmp}/checkpoint", "LEDGER": "{tmp}/ledger", "URI": "sqlite:///{tmp}/dead.db",
    "NAME": "dead_letters", "BYTES": "134217728", "H": "168", "S": "3600", "N": "2",
    "KEY=VALUE": "AWS_REGION=eu-west-1", "ID": "orders-v1", "STRATEGY": "two-phase",
    "POINT": "sink.mid_write", "SHAPE": "--partitions 1 --consumers 4 --records 40",
}


def _command_lines() -> list[tuple[str, str]]:
    """``(where, line)`` of each command in a shell or plain block, continuations joined."""
    found = []
    for path in documents():
        for block in blocks(path):
            if block.lang not in SHELL:
                continue
            lines = block.code.splitlines()
            index = 0
            while index < len(lines):
                start, line = index, lines[index]
                while line.rstrip().endswith("\\"):
                    index += 1
                    line = line.rstrip()[:-1] + " " + lines[index].strip()
                index += 1
                words = line.split()
                # A command starts its line; an indented mention is a program's output.
                if words and PROGRAM.match(words[0]) and line.startswith(words[0]):
                    found.append((f"{block.where.split(':')[0]}:{block.line + 1 + start}", line))
    return found


def _variants(synopsis: str) -> list[str]:
    """A usage synopsis written out: each ``[optional]`` part present, each ``a | b``
    alternative in a line of its own."""
    inner = re.search(r"\[([^\[\]]*)\]", synopsis)
    if inner is None:
        return [synopsis]
    return [
        variant
        for choice in inner.group(1).split(" | ")
        for variant in _variants(synopsis[: inner.start()] + choice + synopsis[inner.end():])
    ]


def _arguments(line: str, tmp: Path) -> list[str]:
    words = shlex.split(line, comments=True)[1:]
    filled: list[str] = []
    for word in words:
        if word == "...":
            continue
        if re.fullmatch(r"[A-Z][A-Z_=]*", word):
            assert word in PLACEHOLDERS, f"placeholder {word!r}: give it a value in PLACEHOLDERS"
            filled += PLACEHOLDERS[word].format(tmp=tmp).split()
        else:
            filled.append(word)
    return filled


def _parse(args: list[str]) -> Any:
    """What the console script does with ``args`` up to, not including, running the command."""
    command = typer.main.get_command(app)
    context = command.make_context("kafka-share-eos", list(args))
    while isinstance(command, TyperGroup):
        rest = [*getattr(context, "_protected_args", []), *context.args]
        name, sub, rest = command.resolve_command(context, rest)
        assert sub is not None and name is not None
        command, context = sub, sub.make_context(name, rest, parent=context)
    return context


LINES = _command_lines()


def test_the_docs_show_command_lines_in_every_shape() -> None:
    shown = " ".join(line for _, line in LINES)

    assert len(LINES) >= 25
    for words in ("verify --broker kafka", "dedup prune", "doctor --checkpoint", "twophase recover",
                  "status --journal", "broker --topic", "bench --save"):
        assert words in shown


@pytest.mark.parametrize(("where", "line"), LINES, ids=[where for where, _ in LINES])
def test_documented_command_line_is_accepted_by_the_command_parser(
    where: str, line: str, tmp_path: Path
) -> None:
    for variant in _variants(line):
        try:
            context = _parse(_arguments(variant, tmp_path))
        except typer.Exit as done:  # --help prints and stops, as it should
            assert done.exit_code == 0, variant
            context = None
        except TyperException as error:
            pytest.fail(f"{where}: {variant!r} is refused: {error}")
        comment = line.partition("#")[2]
        if context is not None:
            # A comment naming options ("# --orders, --per-trigger") names real ones.
            known = {o for p in context.command.params for o in p.opts + p.secondary_opts}
            assert set(re.findall(r"--[\w-]+", comment)) <= known, (where, comment)


def _inline_mentions() -> list[tuple[str, str]]:
    return [
        (path.name, span)
        for path in documents()
        for span in re.findall(r"`((?:\.venv/bin/)?kafka-share-eos [^`]*)`", path.read_text())
    ]


def _command_at(words: list[str]) -> tuple[Any, list[str]]:
    """The (sub)command the leading words name, and the words after them."""
    command: Any = typer.main.get_command(app)
    while words and isinstance(command, TyperGroup):
        sub = command.get_command(command.context_class(command), words[0])
        if sub is None:
            break
        command, words = sub, words[1:]
    return command, words


@pytest.mark.parametrize(("page", "span"), _inline_mentions())
def test_inline_command_mention_names_real_commands_and_options(page: str, span: str) -> None:
    words = span.replace("\\|", "|").split()[1:]
    # "dedup stats/prune/compact", "dedup prune\|compact\|stats": one mention of several.
    head = next((i for i, w in enumerate(words) if re.search(r"[/|]", w)), None)
    mentions = [words]
    if head is not None and not words[head].startswith("-"):
        mentions = [[*words[:head], name, *words[head + 1:]]
                    for name in re.split(r"\s*[/|]\s*", words[head]) if name]
    for mention in mentions:
        command, rest = _command_at(mention)
        assert not isinstance(command, TyperGroup) or not rest or rest[0].startswith("-"), (
            f"{page}: `{span}` names no command {rest[0]!r}")
        if command.context_settings.get("ignore_unknown_options"):
            continue  # the options after kafka-tool's NAME are Kafka's tool's
        known = {o for p in command.params for o in p.opts + p.secondary_opts}
        named = set(re.findall(r"(?<![\w-])--[\w-]+", " ".join(rest)))
        assert named <= known, f"{page}: `{span}`: {sorted(named - known)} unknown"
