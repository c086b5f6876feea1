"""No import circle among cog's modules and no import that climbs back up a layer: read from the
source (ast). Every import counts, those inside functions too (they run when called, and a
deferred import is still a dependency), and those made only for type checking (``if
TYPE_CHECKING:``) count for circles; the layer check leaves those out (they never run).

The layers, top first (ARCHITECTURE.md says the same): the command line (``cogcli.cli``,
``cogcli.commands``), the front ends (``acp``, ``server``, ``batch``, ``chat``, ``mcp.server``,
``adapters``), the session (and the ``cogcli`` facade), cog's core (the loop, memory, compaction,
rendering, hooks, trust, settings, the MCP client), the model clients (``cogcli.models``,
``pricing``), the workspace tools (``workspace_tools``), and at the bottom the contract the tools
are written against (:data:`CONTRACT`). So ``cogcli`` depends on ``workspace_tools`` (the session
makes the tools) and ``workspace_tools`` only on that contract."""

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


#: what ``workspace_tools`` may import of ``cogcli``: the contract a tool is written against
CONTRACT = ("cogcli.contract.allow_list", "cogcli.contract.errors", "cogcli.contract.tool", "cogcli.contract.output", "cogcli.contract.context", "cogcli.contract.details", "cogcli.contract.preview",
            "cogcli.secrets.redactor", "cogcli.secrets.formats", "cogcli.secrets.key_blocks", "cogcli.secrets.environment", "cogcli.contract.diffstat",
            "cogcli.contract.presentation")
#: the layers, top first: a module is in the layer of the longest prefix that names it
LAYERS: list[tuple[str, ...]] = [
    ("cogcli.cli", "cogcli.commands", "cogcli.__main__"),
    ("cogcli.acp", "cogcli.server", "cogcli.batch", "cogcli.chat", "cogcli.adapters.mcp_server", "cogcli.adapters"),
    ("cogcli.session", "cogcli.__init__"),
    ("cogcli", "cogcli.project.slash_commands"),  # the chat's slash commands: the names every front end keeps free
    ("cogcli.models", "cogcli.settings.prices"),
    ("workspace_tools",),
    CONTRACT,
]


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


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer (the package ``cogcli`` itself is its
    facade, ``cogcli.__init__``)."""
    module = "cogcli.__init__" if module == "cogcli" else module
    best, found = -1, len(LAYERS)
    for index, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, found = len(prefix), index
    return found


def climbs(g: dict[str, set[str]]) -> list[str]:
    """Imports from a module to one in a layer above it."""
    return sorted(f"{m} -> {d}" for m, deps in g.items() for d in deps if layer_of(d) < layer_of(m))


def test_the_import_graph_is_read_from_the_source() -> None:
    g = graph()
    assert "cogcli.threads.entries" in g["cogcli.contract.result"] and "cogcli.wire.events" in g["cogcli.threads.entries"]
    assert "cogcli.contract.context" in g["cogcli.wire.events"]  # a TYPE_CHECKING import counts
    assert "cogcli.shown.visible" in g["cogcli.cli.setting_flags"]  # so does one inside a function
    assert "cogcli.contract.result" not in graph(typing=False)["cogcli.secrets.redactor"]  # not for the layers: it never runs
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert layer_of("cogcli.cli.typer_app") < layer_of("cogcli.adapters.mcp_server") < layer_of("cogcli.session") < layer_of("cogcli.mcp.client")
    assert layer_of("cogcli.mcp.client") < layer_of("cogcli.models.anthropic") < layer_of("workspace_tools.runners.run_tests") < layer_of("cogcli.contract.errors")
    assert climbs({"workspace_tools.runners.run_tests": {"cogcli.compaction"}}) == ["workspace_tools.runners.run_tests -> cogcli.compaction"]


def test_no_import_climbs_back_up_a_layer() -> None:
    found = climbs(graph(typing=False))
    assert found == [], "imports that climb back up (move the code down, or hand it in from above): " + ", ".join(found)


def test_no_import_circle_among_cogs_modules() -> None:
    found = circles(graph())
    unexpected = [sorted(group) for group in found if group not in ALLOWED]
    assert unexpected == [], f"import circles: {unexpected}"
    gone = [sorted(group) for group in ALLOWED if group not in found]
    assert gone == [], f"no longer circles, take them off ALLOWED: {gone}"
