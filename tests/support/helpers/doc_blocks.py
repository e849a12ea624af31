"""The fenced code blocks of the README and the docs, and what makes a Python block runnable.

A block may be preceded by an HTML comment (invisible once rendered) that tells the docs tests
how to treat it:

- ``<!-- docs-test: compile-only (reason) -->``: the block needs something the suite cannot
  start (a SASL cluster, S3) or is a listing rather than code; it is compiled and its imports
  are run, not the rest.
- ``<!-- docs-test: continues -->``: the block goes on from the page's previous Python block, in
  the same namespace, as a reader following the page would run it.
"""

from __future__ import annotations

import ast
import builtins
import re
import symtable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<lang>[\w-]*)\s*$")
_MARKER = re.compile(
    r"^\s*<!--\s*docs-test:\s*(?P<kind>[\w-]+)\s*(?:\((?P<reason>.*)\))?\s*-->\s*$"
)
MARKERS = ("compile-only", "continues")


@dataclass(frozen=True)
class Block:
    """One fenced block: its page, the line of its opening fence, its language and text."""

    path: Path
    line: int
    lang: str
    code: str
    marker: str | None
    reason: str | None
    ordinal: int  # among the page's blocks of the same language, from 1

    @property
    def name(self) -> str:
        """``page#n``: the page's n-th block of its language (``README.md#1``)."""
        return f"{self.path.name}#{self.ordinal}"

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    """The README and every page of the docs (not the generated results)."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path``, with the marker comment just above it, if any."""
    lines = path.read_text().splitlines()
    found: list[Block] = []
    counts: dict[str, int] = {}
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent = len(opening.group("indent"))
        end = index + 1
        while not re.match(r"^\s*```\s*$", lines[end]):
            end += 1
        code = "\n".join(line[indent:] for line in lines[index + 1 : end])
        marker = reason = None
        above = index - 1
        while above >= 0 and not lines[above].strip():
            above -= 1
        if above >= 0 and (comment := _MARKER.match(lines[above])):
            marker, reason = comment.group("kind"), comment.group("reason")
            if marker not in MARKERS:
                raise ValueError(f"{path.name}:{above + 1}: unknown docs-test marker {marker!r}")
        lang = opening.group("lang")
        counts[lang] = counts.get(lang, 0) + 1
        found.append(Block(path, index + 1, lang, code + "\n", marker, reason, counts[lang]))
        index = end + 1
    return found


def python_blocks() -> list[Block]:
    return [block for path in documents() for block in blocks(path) if block.lang == "python"]


def free_names(code: str) -> set[str]:
    """Names the block reads without defining them (nor importing them, nor builtins)."""
    top = symtable.symtable(code, "<block>", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    used: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        used |= {s.get_name() for s in table.get_symbols()
                 if s.is_referenced() and (table is top or s.is_global())}
    return used - defined - set(dir(builtins))


class ToTestResources(ast.NodeTransformer):
    """Points the places a block names at the suite's own: ``broker:9092`` at the block's
    embedded broker, PostgreSQL URLs at a fresh database of the suite's server, absolute paths
    under the test's temporary directory. Object-store URIs are left alone, so a block that
    writes to one cannot pass without a ``compile-only`` marker."""

    def __init__(self, bootstrap: str, postgres_url: str | None, root: Path) -> None:
        self.bootstrap = bootstrap
        self.postgres_url = postgres_url
        self.root = root
        self.postgres_used = False

    def rebase(self, text: str) -> str:
        if "broker:9092" in text:
            return text.replace("broker:9092", self.bootstrap)
        if text.startswith("postgresql+psycopg://"):
            self.postgres_used = True
            if self.postgres_url is None:
                raise LookupError("this block needs PostgreSQL")
            return self.postgres_url
        if text.startswith("/") and not text.startswith("//") and " " not in text:
            return str(self.root / text.lstrip("/"))
        return text

    def visit_Constant(self, node: ast.Constant) -> ast.Constant:
        if isinstance(node.value, str):
            return ast.copy_location(ast.Constant(self.rebase(node.value)), node)
        return node


def imports_only(code: str) -> str:
    """The block's import statements, as a program of their own."""
    tree = ast.parse(code)
    kept = [node for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)]
    return ast.unparse(ast.Module(body=kept, type_ignores=[]))
