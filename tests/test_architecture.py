"""Architecture rules for ``reverie/``, read from the source with ``ast``: nothing is imported.

1. Nothing imports in a loop: the module import graph has no cycle. Every runtime import
   counts, also one inside a function (a function-level import only hides a loop until the
   function runs). Imports under ``if TYPE_CHECKING:`` never run, so they are left out of the
   graph and listed separately in the report.
2. No function-level import of reverie's own modules, but for the few in ``LAZY_OWN`` (the
   network stack, imported by the CLI commands that serve). Third-party libraries may be
   imported lazily only when they are in ``LAZY_THIRD_PARTY`` (optional or heavy ones); the
   standard library is free.
3. Layers: the base modules (errors, models, text, tokens, redact, settings, store) never
   import the facade (memory), the front ends (cli, server, console) or a line module
   (recall, learn, dream, maintenance, turn, portability) -- not even for type checking.

How an import statement maps to modules: ``import reverie.a.b`` is an import of
``reverie.a.b``; ``from reverie.a import b`` is an import of ``reverie.a.b`` when ``b`` is a
submodule and of ``reverie.a`` otherwise; relative imports resolve against the importing
module's package. A parent package's ``__init__`` is not counted as imported (every module
would otherwise "import" ``reverie/__init__.py``).

``python tests/test_architecture.py`` prints the whole report (cycles, function-level
imports, type-only imports, layer breaches).
"""

from __future__ import annotations

import ast
import sys
from collections import deque
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "reverie"

# Third-party libraries a function may import lazily, each for a stated reason. Only
# third-party top-level names belong here; reverie's own modules are never allowed lazily.
LAZY_THIRD_PARTY: dict[str, str] = {
    "tiktoken": "optional (not a dependency); the token counter falls back without it",
    "jieba": "loads a large dictionary; only Chinese text needs it",
    "uvicorn": "the server runner; only `reverie serve` needs it",
    "openai": "the SDK takes ~0.4 s to import; only the openai engine needs it",
    "psycopg": "optional extra `reverie[postgres]`",
    "psycopg_pool": "optional extra `reverie[postgres]`",
}

# reverie's own modules a function may import lazily: (importer, imported) package prefixes,
# each for a stated reason. Rule 1 still counts these imports, so none can hide a loop.
LAZY_OWN: dict[tuple[str, str], str] = {
    ("reverie.cli", "reverie.server"): "FastAPI, uvicorn and the MCP SDK took two thirds of every "
    "CLI command's start (3.7 s of import, 1.2 s without them); only `serve` and `mcp` need them",
}

BASE_LAYER = (
    "reverie.errors",
    "reverie.models",
    "reverie.text",
    "reverie.tokens",
    "reverie.redact",
    "reverie.settings",
    "reverie.store",
)
LINE_MODULES = (
    "reverie.recall",
    "reverie.learn",
    "reverie.dream",
    "reverie.maintenance",
    "reverie.turn",
    "reverie.portability",
)
ABOVE_BASE = ("reverie.memory", "reverie.cli", "reverie.server", "reverie.console", *LINE_MODULES)


@dataclass(frozen=True)
class Import:
    source: str  # the importing module
    target: str  # a module of the package, or the top-level name of another library
    path: str  # the importing file, relative to the root
    line: int
    in_function: bool
    type_only: bool  # under ``if TYPE_CHECKING:``
    statement: str

    @property
    def internal(self) -> bool:
        return within(self.target, (self.package,))

    @property
    def package(self) -> str:
        return self.source.split(".", 1)[0]

    def where(self) -> str:
        return f"{self.path}:{self.line}"

    def describe(self) -> str:
        how = "type-only" if self.type_only else "in a function" if self.in_function else "module level"
        return f"{self.where()}: {self.source} -> {self.target} ({how}): {self.statement}"


def within(name: str, prefixes: tuple[str, ...]) -> bool:
    """True when ``name`` is one of ``prefixes`` or a submodule of one."""
    return any(name == prefix or name.startswith(prefix + ".") for prefix in prefixes)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def discover(root: Path, package: str) -> dict[str, Path]:
    """Every module of the package, by dotted name."""
    files = sorted(p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)
    return {module_name(path, root): path for path in files}


def _is_type_checking(test: ast.expr) -> bool:
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _known(name: str, modules: dict[str, Path]) -> str:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return name


def _targets(node: ast.Import | ast.ImportFrom, source: str, is_package: bool, package: str, modules: dict[str, Path]) -> list[str]:
    def resolve(name: str) -> str:
        if within(name, (package,)):
            return _known(name, modules)
        return name.split(".", 1)[0]

    if isinstance(node, ast.Import):
        found = [resolve(alias.name) for alias in node.names]
    else:
        if node.level:
            anchor = source.split(".") if is_package else source.split(".")[:-1]
            anchor = anchor[: len(anchor) - (node.level - 1)]
            base = ".".join(anchor + ([node.module] if node.module else []))
        else:
            base = node.module or ""
        if within(base, (package,)):
            found = [
                f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else _known(base, modules)
                for alias in node.names
            ]
        else:
            found = [resolve(base)]
    return list(dict.fromkeys(found))


def scan(root: Path = ROOT, package: str = PACKAGE) -> list[Import]:
    """Every import statement of the package, one row per imported module."""
    modules = discover(root, package)
    found: list[Import] = []
    for source, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        rel = path.relative_to(root).as_posix()
        is_package = path.name == "__init__.py"

        def visit(node: ast.AST, in_function: bool, type_only: bool) -> None:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, source, is_package, package, modules):
                    found.append(
                        Import(source, target, rel, node.lineno, in_function, type_only, ast.unparse(node))
                    )
                return
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                in_function = True
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                for child in node.body:
                    visit(child, in_function, True)
                for child in node.orelse:
                    visit(child, in_function, type_only)
                return
            for child in ast.iter_child_nodes(node):
                visit(child, in_function, type_only)

        visit(tree, False, False)
    return found


def graph(imports: list[Import]) -> dict[str, dict[str, list[Import]]]:
    """Runtime edges between the package's own modules (type-only imports left out)."""
    edges: dict[str, dict[str, list[Import]]] = {}
    for imp in imports:
        if imp.type_only or not imp.internal or imp.target == imp.source:
            continue
        edges.setdefault(imp.source, {}).setdefault(imp.target, []).append(imp)
    return edges


def strongly_connected(edges: dict[str, dict[str, list[Import]]]) -> list[list[str]]:
    """Tarjan's components with more than one module, each sorted, in a stable order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, {})):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    nodes = sorted(set(edges) | {t for targets in edges.values() for t in targets})
    for node in nodes:
        if node not in index:
            connect(node)
    return sorted(components)


def shortest_cycle(start: str, members: set[str], edges: dict[str, dict[str, list[Import]]]) -> list[str]:
    """The shortest loop from ``start`` back to itself inside one component."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for nxt in sorted(edges.get(node, {})):
            if nxt not in members:
                continue
            if nxt == start:
                path = [node]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return [*reversed(path), start]
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return []


def cycle_report(imports: list[Import]) -> list[str]:
    edges = graph(imports)
    lines: list[str] = []
    for component in strongly_connected(edges):
        members = set(component)
        lines.append(f"import cycle among {len(component)} modules: {', '.join(component)}")
        seen: set[tuple[str, ...]] = set()
        for member in component:
            loop = shortest_cycle(member, members, edges)
            rotation = min(tuple(loop[i:-1] + loop[:i]) for i in range(len(loop) - 1))
            if rotation not in seen:
                seen.add(rotation)
                lines.append("  cycle: " + " -> ".join((*rotation, rotation[0])))
        lines.append("  the imports that close it:")
        for source in component:
            for target, rows in sorted(edges.get(source, {}).items()):
                if target in members:
                    lines.extend(f"    {row.describe()}" for row in rows)
    return lines


def lazy_import_report(imports: list[Import]) -> list[str]:
    lines = []
    for imp in imports:
        if not imp.in_function or imp.type_only:
            continue
        if imp.internal:
            if not any(within(imp.source, (a,)) and within(imp.target, (b,)) for a, b in LAZY_OWN):
                lines.append(f"{imp.describe()}  [the package's own module, not in LAZY_OWN]")
        elif imp.target not in sys.stdlib_module_names and imp.target not in LAZY_THIRD_PARTY:
            lines.append(f"{imp.describe()}  [third-party, not in LAZY_THIRD_PARTY]")
    return lines


def layer_report(imports: list[Import]) -> list[str]:
    return [
        imp.describe()
        for imp in imports
        if within(imp.source, BASE_LAYER) and within(imp.target, ABOVE_BASE)
    ]


def type_only_report(imports: list[Import]) -> list[str]:
    return [imp.describe() for imp in imports if imp.type_only and imp.internal]


@lru_cache(maxsize=1)
def _imports() -> tuple[Import, ...]:
    return tuple(scan())


def _with_type_only(lines: list[str]) -> str:
    extra = type_only_report(list(_imports()))
    listed = ["", "type-only imports (under TYPE_CHECKING, not part of the graph):", *(f"  {x}" for x in extra)]
    return "\n".join(lines + (listed if extra else []))


# --- the rules ----------------------------------------------------------------------------


def test_no_import_cycles() -> None:
    problems = cycle_report(list(_imports()))
    if problems:
        pytest.fail(_with_type_only(problems), pytrace=False)


def test_no_function_level_imports_of_reverie_modules() -> None:
    problems = lazy_import_report(list(_imports()))
    if problems:
        pytest.fail("function-level imports:\n" + "\n".join(problems), pytrace=False)


def test_base_layer_does_not_import_upper_layers() -> None:
    problems = layer_report(list(_imports()))
    if problems:
        pytest.fail(
            "base-layer modules importing memory, cli, server or a line module:\n" + "\n".join(problems),
            pytrace=False,
        )


def test_layer_rules_name_modules_that_exist() -> None:
    """A rename must update the rules, or they silently stop checking anything."""
    modules = discover(ROOT, PACKAGE)
    missing = [name for name in (*BASE_LAYER, *ABOVE_BASE) if not any(within(m, (name,)) for m in modules)]
    assert not missing, f"layer rules name modules that no longer exist: {missing}"


def test_lazy_allowlist_holds_third_party_libraries_only() -> None:
    own = [name for name in LAZY_THIRD_PARTY if within(name, (PACKAGE,)) or name in sys.stdlib_module_names]
    assert not own, f"LAZY_THIRD_PARTY is for third-party libraries only: {own}"


# --- the scanner itself, on a small package written for the purpose -------------------------


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_scanner_finds_cycles_lazy_and_type_only_imports(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.a import A\n",
            "pkg/a.py": "from typing import TYPE_CHECKING\nfrom . import b\nif TYPE_CHECKING:\n    from pkg.c import C\nA = 1\n",
            "pkg/b.py": "def f():\n    from .sub import deep\n    import json\n    import tiktoken\n    import numpy\n",
            "pkg/c.py": "import pkg.a\nC = 1\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/deep.py": "from .. import c\nfrom ..a import A\nimport typing\nif typing.TYPE_CHECKING:\n    import pkg.b\nelse:\n    import pkg.c\n",
        },
    )
    imports = scan(tmp_path, "pkg")
    rows = {(i.source, i.target, i.in_function, i.type_only) for i in imports if i.internal}
    assert rows == {
        ("pkg", "pkg.a", False, False),
        ("pkg.a", "pkg.b", False, False),  # from . import b: the submodule
        ("pkg.a", "pkg.c", False, True),
        ("pkg.b", "pkg.sub.deep", True, False),
        ("pkg.c", "pkg.a", False, False),
        ("pkg.sub.deep", "pkg.c", False, False),  # from .. import c
        ("pkg.sub.deep", "pkg.a", False, False),  # from ..a import A: a name, so the module
        ("pkg.sub.deep", "pkg.b", False, True),
    }
    # a -> b -> sub.deep -> c -> a is a loop (through b's function-level import); a -> c is type-only
    assert strongly_connected(graph(imports)) == [["pkg.a", "pkg.b", "pkg.c", "pkg.sub.deep"]]
    report = cycle_report(imports)
    assert "  cycle: pkg.a -> pkg.b -> pkg.sub.deep -> pkg.a" in report
    assert "  cycle: pkg.a -> pkg.b -> pkg.sub.deep -> pkg.c -> pkg.a" in report
    lazy = lazy_import_report(imports)
    assert len(lazy) == 2
    assert lazy[0].startswith("pkg/b.py:2: pkg.b -> pkg.sub.deep (in a function)")
    assert lazy[1].startswith("pkg/b.py:5: pkg.b -> numpy (in a function)")  # json: stdlib, tiktoken: allowed
    assert [line.split(":")[0:2] for line in type_only_report(imports)] == [["pkg/a.py", "4"], ["pkg/sub/deep.py", "5"]]


def test_scanner_sees_the_real_package() -> None:
    modules = discover(ROOT, PACKAGE)
    assert {"reverie", "reverie.models", "reverie.store.sqlite", "reverie.cli"} <= set(modules)
    sources = {imp.source for imp in _imports()}
    assert "reverie.models" in sources and "reverie.memory" in sources


if __name__ == "__main__":
    everything = list(scan())
    sections = [
        ("import cycles", cycle_report(everything)),
        ("function-level imports", lazy_import_report(everything)),
        ("type-only imports (not part of the graph)", type_only_report(everything)),
        ("layer breaches", layer_report(everything)),
    ]
    for title, lines in sections:
        print(f"== {title}: {'none' if not lines else ''}")
        for line in lines:
            print(line if line.startswith(" ") else f"  {line}")
