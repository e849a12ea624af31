"""What the README says to install is what pyproject.toml and the code define: every extra in its
table with what it installs, ``all`` as pyproject has it, the wheel's name as ``python -m build``
writes it, and every benchmark ``bench --only`` takes in each list of them."""

from __future__ import annotations

import re
import tomllib

import pytest
from helpers.doc_blocks import ROOT

from kafka_share_eos.proving_ground.bench.suite import BENCHMARKS

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
README = (ROOT / "README.md").read_text()
# The development extras, for the repository's own tests and tools.
DEVELOPMENT = {"test", "test-tools", "dev"}


def _extras_table() -> dict[str, str]:
    section = README[README.index("## Install"):README.index("## Using it")]
    rows = re.findall(r"^\| `([\w-]+)` \| (.*?) \|", section, re.M)
    return dict(rows)


def test_the_extras_table_has_every_extra_of_pyproject() -> None:
    documented = set(_extras_table())
    defined = set(PYPROJECT["project"]["optional-dependencies"]) - DEVELOPMENT

    assert documented == defined


def test_all_is_documented_as_pyproject_defines_it() -> None:
    (requirement,) = PYPROJECT["project"]["optional-dependencies"]["all"]
    defined = set(re.search(r"\[(.*)\]", requirement)[1].split(","))  # type: ignore[index]

    assert set(re.findall(r"`([\w-]+)`", _extras_table()["all"])) == defined


@pytest.mark.parametrize("extra", sorted(set(PYPROJECT["project"]["optional-dependencies"])
                                         - DEVELOPMENT - {"all", "connect"}))
def test_each_extras_row_names_its_distributions(extra: str) -> None:
    installs = _extras_table()[extra].lower()
    for requirement in PYPROJECT["project"]["optional-dependencies"][extra]:
        name = re.match(r"[\w.-]+", requirement)[0]  # type: ignore[index]
        assert name.lower() in installs, f"{extra}: {name} not in {installs!r}"


def test_the_wheel_line_names_the_wheel_build_writes() -> None:
    wheel = f"kafka_share_eos-{PYPROJECT['project']['version']}-py3-none-any.whl"

    assert f"'{wheel}[spark,postgres]'" in README


@pytest.mark.parametrize("page", ["README.md", "docs/operations.md"])
def test_every_list_of_benchmarks_names_each_one(page: str) -> None:
    text = " ".join((ROOT / page).read_text().split())
    listing = re.search(r"`--only NAME`.{0,30}?the named benchmarks:? \(?(`[^.)]*`)[.)]", text)
    assert listing is not None, f"{page} lists no benchmarks for --only"

    assert set(re.findall(r"`([^`]+)`", listing[1])) == set(BENCHMARKS)
