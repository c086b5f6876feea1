"""Dependencies point down only, between packages: read from the source (ast). Every import counts,
those inside functions too (they run when called, and a deferred import is still a dependency);
those made only for type checking (``if TYPE_CHECKING:``) count for circles, and the layer check
leaves them out (they never run).

Each package of ``cogcli`` and ``workspace_tools`` (a folder: ``cogcli.loop``, ``workspace_tools.files``)
sits in one layer of :data:`LAYERS`, top first, and the modules left at the top (the ``cogcli`` and
``workspace_tools`` facades, ``cogcli.__main__``, ``cogcli.version``) are packages of their own. A
module may import its own package and packages in layers below its own — never one beside it or
above it. ARCHITECTURE.md's map says the same; a new package is placed here or this test fails."""

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


#: the layers, top first; a package imports only packages in layers below its own
LAYERS: list[tuple[str, ...]] = [
    ("cogcli.__main__",),
    ("cogcli.cli",),  # the commands declared (typer)
    ("cogcli.commands",),  # their bodies: parse → session → render
    ("cogcli.acp", "cogcli.server", "cogcli.batch", "cogcli.adapters", "cogcli.chat", "cogcli.worktrees"),  # the front ends
    ("cogcli.session", "cogcli"),  # where every run starts; the public facade
    ("cogcli.loop", "cogcli.render"),  # the run; drawing its events
    ("cogcli.gate", "cogcli.compaction", "cogcli.threads", "cogcli.agent_tools"),  # what a run consults and keeps
    ("cogcli.hooks", "cogcli.models", "cogcli.project", "cogcli.mcp"),  # the person's hooks, model clients, the project's files, MCP servers
    ("cogcli.settings",),
    ("cogcli.wire",),  # the events on the wire
    ("workspace_tools",),  # workspace_tools(): the tools of a folder
    ("workspace_tools.shell", "workspace_tools.diagnostics"),  # run_command; the checkers after a change
    ("workspace_tools.files", "workspace_tools.git", "workspace_tools.runners"),
    ("workspace_tools.sandbox", "workspace_tools.text", "workspace_tools.workspace"),
    ("workspace_tools.host",),
    ("cogcli.contract",),  # what a tool is written against
    ("cogcli.shown", "cogcli.secrets"),
    ("cogcli.version",),
]
#: modules at the top of a package root that stand alone (not the facade)
TOP_MODULES = ("cogcli.__main__", "cogcli.version")


def package_of(module: str) -> str:
    """``cogcli.loop.run`` → ``cogcli.loop``; a module at the top is its own (the facade is ``cogcli``)."""
    parts = module.split(".")
    if module in TOP_MODULES or len(parts) == 1:
        return module
    if (ROOT / parts[0] / parts[1]).is_dir():
        return ".".join(parts[:2])
    return parts[0]


def _imports(body: list[ast.stmt], *, typing: bool = True) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import of a module, at any depth (inside functions and classes too); ``typing=False``
    leaves out those under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, ast.If) and not typing and "TYPE_CHECKING" in ast.unparse(node.test):
            yield from _imports(node.orelse, typing=typing)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                yield from _imports([child], typing=typing)
            else:
                for inner in ast.walk(child):
                    if isinstance(inner, ast.stmt):
                        yield from _imports([inner], typing=typing)


def imports_of(name: str, path: Path, known: dict[str, Path], *, typing: bool = True) -> set[str]:
    """The modules of ``known`` that ``name`` imports (``from a import b`` is ``a.b`` when that is a
    module, else ``a``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: set[str] = set()
    for node in _imports(ast.parse(path.read_text(encoding="utf-8")).body, typing=typing):
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


def graph(*, typing: bool = True) -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, known, typing=typing) for name, path in known.items()}


def layer_of(package: str) -> int:
    """The index in :data:`LAYERS` of ``package``'s layer (``len(LAYERS)`` when it has none)."""
    return next((index for index, members in enumerate(LAYERS) if package in members), len(LAYERS))


def climbs(g: dict[str, set[str]]) -> list[str]:
    """Imports from a module to one of another package that is not in a layer below its own."""
    return sorted(
        f"{m} -> {d}" for m, deps in g.items() for d in deps
        if package_of(m) != package_of(d) and layer_of(package_of(d)) <= layer_of(package_of(m))
    )


def test_the_import_graph_is_read_from_the_source() -> None:
    g = graph()
    assert "cogcli.threads.entries" in g["cogcli.loop.run"] and "cogcli.wire.events" in g["cogcli.threads.entries"]
    assert "cogcli.contract.result" in g["cogcli.wire.events"]  # a TYPE_CHECKING import counts
    assert "cogcli.shown.visible" in g["cogcli.cli.setting_flags"]  # so does one inside a function
    assert "cogcli.contract.result" not in graph(typing=False)["cogcli.secrets.redactor"]  # not for the layers: it never runs
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert [package_of(m) for m in ("cogcli.loop.run", "cogcli", "cogcli.version", "workspace_tools.runners.pytest_plugin", "workspace_tools")] == [
        "cogcli.loop", "cogcli", "cogcli.version", "workspace_tools.runners", "workspace_tools"
    ]
    assert layer_of("cogcli.cli") < layer_of("cogcli.acp") < layer_of("cogcli.session") < layer_of("cogcli.loop") < layer_of("cogcli.gate")
    assert layer_of("cogcli.gate") < layer_of("cogcli.hooks") < layer_of("workspace_tools.files") < layer_of("cogcli.contract")
    assert climbs({"workspace_tools.runners.run_tests": {"cogcli.compaction.stubs"}}) == ["workspace_tools.runners.run_tests -> cogcli.compaction.stubs"]
    assert climbs({"cogcli.gate.pipeline": {"cogcli.threads.store"}}) == ["cogcli.gate.pipeline -> cogcli.threads.store"]  # beside it: no
    assert climbs({"cogcli.loop.run": {"cogcli.loop.turn", "cogcli.gate.pipeline"}}) == []


def test_every_package_has_a_layer() -> None:
    packages = {package_of(m) for m in modules()}
    unplaced = sorted(p for p in packages if layer_of(p) == len(LAYERS))
    assert unplaced == [], f"packages with no layer in LAYERS (place each, and in ARCHITECTURE.md's map): {unplaced}"
    listed = [p for layer in LAYERS for p in layer]
    assert sorted(listed) == sorted(packages), f"LAYERS names packages that do not exist: {sorted(set(listed) - packages)}"


def test_dependencies_point_down_only() -> None:
    found = climbs(graph(typing=False))
    assert found == [], "imports of a package beside or above (move the code down, or hand it in from above): " + ", ".join(found)


def test_no_import_circle_among_cogs_modules() -> None:
    found = circles(graph())
    unexpected = [sorted(group) for group in found if group not in ALLOWED]
    assert unexpected == [], f"import circles: {unexpected}"
    gone = [sorted(group) for group in ALLOWED if group not in found]
    assert gone == [], f"no longer circles, take them off ALLOWED: {gone}"
