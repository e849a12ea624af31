"""Every command's ``--help`` at 80 columns: flags alone, values with a name, every option and
choice whole, descriptions that wrap at the width rather than where the docstring broke."""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest
import typer
from typer.testing import CliRunner

from kafka_share_eos.cli.help_text import unwrap
from kafka_share_eos.cli.main import app

WIDTH = 80


def command_paths(command: object, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from command_paths(sub, (*path, name))


PATHS = list(command_paths(typer.main.get_command(app)))


def rendered(path: tuple[str, ...]) -> str:
    result = CliRunner().invoke(app, [*path, "--help"],
                                env={"COLUMNS": str(WIDTH), "NO_COLOR": "1", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    return result.output


def test_every_command_is_rendered() -> None:
    names = {" ".join(path) for path in PATHS}
    assert {"", "status", "doctor", "verify", "bench", "broker", "demo", "dedup prune",
            "dedup compact", "dedup stats", "twophase recover"} <= names


@pytest.mark.parametrize("path", PATHS, ids=lambda path: " ".join(path) or "main")
def test_help_at_80_columns_reads_whole(path: tuple[str, ...]) -> None:
    text = rendered(path)
    lines = text.splitlines()
    assert [line for line in lines if len(line) > WIDTH] == []
    assert "…" not in text
    assert re.findall(r"<(?:bool|str|int|float|path|list)[^>]*>", text) == []
    assert "--no-no-" not in text
    usage = next(line for line in lines if "Usage:" in line)
    assert "{" not in usage and "<" not in usage
    assert_description_fills_its_lines(lines)


def assert_description_fills_its_lines(lines: list[str]) -> None:
    """Within a paragraph of the description (before the first panel) a line ends only when
    the next word would not fit: no line breaks where the docstring's source had one."""
    start = next(i for i, line in enumerate(lines) if "Usage:" in line) + 1
    end = next((i for i, line in enumerate(lines) if line.startswith("╭")), len(lines))
    body = [line.strip() for line in lines[start:end]]
    for line, following in itertools.pairwise(body):
        if line and following:
            next_word = following.split()[0]
            assert len(line) + 1 + len(next_word) > WIDTH - 4, (line, following)


def test_every_option_name_and_choice_of_verify_is_whole() -> None:
    from kafka_share_eos.proving_ground.verify.known_targets import TARGETS
    from kafka_share_eos.proving_ground.verify.outages import OUTAGES

    words = set(rendered(("verify",)).replace(",", " ").replace(".", " ").split())
    command = typer.main.get_command(app).commands["verify"]  # type: ignore[attr-defined]
    names = {opt for param in command.params for opt in param.opts}
    assert names <= words
    assert set(TARGETS) <= words and set(OUTAGES) <= words


def test_flags_are_flags() -> None:
    refused = CliRunner().invoke(app, ["status", "--journal", "x", "--json", "true"])
    assert refused.exit_code == 2
    help_text = rendered(("status",))
    assert re.search(r"--json +Print one JSON object", help_text)


def test_a_renamed_option_reads_naturally() -> None:
    help_text = rendered(("dedup", "prune"))
    assert "--age-only" in help_text and "no-offset-window" not in help_text


def test_unwrap_joins_lines_within_paragraphs_only() -> None:
    assert unwrap("One\n    two.\n\n    Three\n    four.") == "One two.\n\nThree four."
    assert unwrap("\bkept\nas is") == "\bkept\nas is"
