"""No import circle among cog's modules: read from the source (ast), with the imports made only
for type checking (``if TYPE_CHECKING:``) counted as imports. Imports inside a function are
left out: they run when called, not when the module loads."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import cogcli

ROOT = Path(cogcli.__file__).resolve().parents[1]
PACKAGES = ("cogcli", "workspace_tools")

#: circles that remain for now, each with who removes it; the lead empties this list
ALLOWED: list[set[str]] = []


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _top_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The imports a module makes when it loads, and those under ``if TYPE_CHECKING:`` (any
    ``if``/``try`` at module level), not those inside functions or classes."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body)
            yield from _top_level(node.orelse)
            yield from _top_level(node.finalbody)
            for handler in node.handlers:
                yield from _top_level(handler.body)


def imports_of(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The modules of ``known`` that ``name`` imports (``from a import b`` is ``a.b`` when that is a
    module, else ``a``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in _top_level(ast.parse(path.read_text(encoding="utf-8")).body):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        group.add(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        found.append(group)
    return found


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known) for name, path in known.items()}


def test_the_import_graph_is_read_from_the_source() -> None:
    g = graph()
    assert "cogcli.entries" in g["cogcli.result"] and "cogcli.events" in g["cogcli.entries"]
    assert "cogcli.context" in g["cogcli.events"]  # a TYPE_CHECKING import counts
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]


def test_no_import_circle_among_cogs_modules() -> None:
    found = circles(graph())
    unexpected = [sorted(group) for group in found if group not in ALLOWED]
    assert unexpected == [], f"import circles: {unexpected}"
    gone = [sorted(group) for group in ALLOWED if group not in found]
    assert gone == [], f"no longer circles, take them off ALLOWED: {gone}"
