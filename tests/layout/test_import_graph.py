"""The package has no import loops: its modules form layers, each importing only from below,
counting the imports inside functions too (the ``TYPE_CHECKING`` ones aside, which never run)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "kafka_share_eos"


def _modules() -> dict[str, Path]:
    """Every module by its dotted name; ``strategies/`` ships as ``kafka_share_eos.strategies``."""
    found = {}
    sources = [(path, path.relative_to(ROOT)) for path in (ROOT / PACKAGE).rglob("*.py")
               if "strategies" not in path.relative_to(ROOT / PACKAGE).parts]
    sources += [(path, Path(PACKAGE) / path.relative_to(ROOT))
                for path in (ROOT / "strategies").glob("*.py")]
    for path, shipped in sources:
        name = ".".join(shipped.with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: set[str]) -> None:
        self.module, self.is_package, self.known = module, is_package, known
        self.found: set[str] = set()

    def visit_If(self, node: ast.If) -> None:
        if ast.unparse(node.test) == "TYPE_CHECKING":
            for child in node.orelse:
                self.visit(child)
        else:
            self.generic_visit(node)

    def _add(self, target: str) -> None:
        while target and target not in self.known:
            target = target.rpartition(".")[0]
        if target and target != self.module:
            self.found.add(target)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name.startswith(PACKAGE):
                self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.module if self.is_package else self.module.rpartition(".")[0]
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            source = f"{base}.{node.module}" if node.module else base
        else:
            source = node.module or ""
        if source.startswith(PACKAGE):
            for alias in node.names:
                self._add(f"{source}.{alias.name}")


def _loops(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = []
            while (member := stack.pop()) != module:
                component.append(member)
            if component:
                loops.append(sorted([module, *component]))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return loops


def test_no_module_imports_back_into_one_that_imports_it() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        imports = _Imports(name, path.name == "__init__.py", set(modules))
        imports.visit(ast.parse(path.read_text()))
        graph[name] |= imports.found

    assert len(modules) > 100 and graph[f"{PACKAGE}.ledger.claims"]  # the walk sees the package
    assert _loops(graph) == []
