"""The walk of one tool call through cog's modules, from ``Run._step`` through the gate, execution and
conclusion (issue 46): how many modules it passes, how often it climbs back up the layers and how
often it returns to a module it had left.

    python benchmarks/call_walk.py                 # this tree
    python benchmarks/call_walk.py --tree DIR      # another tree (git archive REV cogcli workspace_tools tests | tar -x -C DIR)

The call: one ``edit_file`` of a real file in a temporary git repository, in a run with plan mode on
(``edit_file`` allowed by name, so it passes), a PreToolUse hook (a real command), the person's
approval (a callback that approves) and the real workspace tools; the model is scripted.

What counts as the walk: every function of ``cogcli`` or ``workspace_tools`` entered while
``Run._step`` runs whose arguments carry the call — its prepared call (or the list of them), the
gate's turn, its parameters, its tool context or its result. From that sequence of modules:

- **modules**: how many different modules it passes;
- **climbs**: calls from a module into one that imports it (directly or not): a callback up the layers;
- **returns**: entering a module the walk had already left.

It counts code, not time: the figures are the same on any machine. ``tests/test_layout.py`` holds
them to the issue's targets (at most 8 modules and 5 climbs)."""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Walk:
    #: the module of each function the walk entered, in order
    modules: list[str] = field(default_factory=list)
    #: for each of them, whether it climbed (was called from a module it imports)
    climbed: list[str | None] = field(default_factory=list)
    #: how many of ``modules`` come before the tool's ``execute`` starts
    to_execution: int = 0

    def figures(self, end: int | None = None) -> dict[str, Any]:
        """modules, climbs and returns of the walk up to ``end`` (all of it: None)."""
        seq = self.modules[:end]
        climbs = [c for c in self.climbed[:end] if c is not None]
        returns = sum(1 for i, m in enumerate(seq) if i and seq[i - 1] != m and m in seq[:i])
        return {"modules": len(set(seq)), "climbs": len(climbs), "returns": returns, "path": _collapsed(seq), "climbed": climbs}


def _collapsed(sequence: list[str]) -> list[str]:
    return [m for i, m in enumerate(sequence) if i == 0 or sequence[i - 1] != m]


def _module_of(filename: str, tree: Path) -> str | None:
    try:
        rel = Path(filename).resolve().relative_to(tree)
    except ValueError:
        return None
    if rel.parts[0] not in ("cogcli", "workspace_tools") or rel.suffix != ".py":
        return None
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _importers(tree: Path) -> dict[str, set[str]]:
    """For each module, every module that imports it, directly or not (function-level imports too)."""
    sys.path.insert(0, str(tree / "tests"))
    import test_import_graph as graph_test

    g = graph_test.graph(typing=False)
    sys.path.remove(str(tree / "tests"))
    reach: dict[str, set[str]] = {}

    def below(m: str, seen: set[str]) -> set[str]:
        for d in g.get(m, ()):
            if d not in seen:
                seen.add(d)
                below(d, seen)
        return seen

    for m in g:
        for d in below(m, set()):
            reach.setdefault(d, set()).add(m)
    return reach


def _first(*paths: str) -> Any:
    """The first of ``paths`` (``module.name``) whose module is in the tree ``cogcli`` was imported from."""
    import importlib

    import cogcli

    tree = Path(cogcli.__file__).resolve().parents[1]
    for path in paths:
        module, _, name = path.rpartition(".")
        file = tree.joinpath(*module.split("."))
        if not (file.with_suffix(".py").is_file() or (file / "__init__.py").is_file()):
            continue
        return getattr(importlib.import_module(module), name)
    raise ImportError(f"none of {paths} in {tree}")


async def _scenario(repo: Path, trace: Any) -> Any:
    from cogcli import Agent, Cogitator
    from cogcli.hooks.engine import HookSet
    from cogcli.models.scripted import Call, ScriptedModel, Turn
    from workspace_tools import workspace_tools

    plan_mode = _first("cogcli.gate.plan_mode.PlanMode", "cogcli.plan_mode.PlanMode")
    hook_spec = _first("cogcli.settings.hook_tables.HookSpec", "cogcli.hooks.config.HookSpec")
    hooks = HookSet(repo, person={"PreToolUse": [hook_spec(matcher="edit_file", command="true")]})
    model = ScriptedModel([
        Turn("", [Call("c1", "edit_file", {"path": "a.py", "old_text": "foo", "new_text": "bar"})]),
        Turn("Done."),
    ])
    agent = Agent(name="walk", instructions="Edit.", model=model, tools=workspace_tools(repo, only=["edit_file"]), max_steps=4)

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        return {a.tool_call_id: True for a in approvals}

    trace.start()
    try:
        result = await Cogitator().run(agent, input="Rename foo to bar", approve=approve, plan=plan_mode.of(["edit_file"]), hooks=hooks)
    finally:
        trace.stop()
    assert (repo / "a.py").read_text() == "bar = 1\n", result
    return result


class _Tracer:
    def __init__(self, tree: Path) -> None:
        self.tree = tree
        self.walk = Walk()
        self.carriers = tuple(
            c for c in (
                _first("cogcli.contract.prepare.PreparedCall", "cogcli.call.PreparedCall"),
                _first("cogcli.contract.result.ToolResult", "cogcli.result.ToolResult"),
                _first("cogcli.contract.context.ToolContext", "cogcli.context.ToolContext"),
                _optional("cogcli.gate.pipeline.GateTurn"),
            ) if c is not None
        )
        self.params = _first("workspace_tools.files.edit.EditFileParams", "workspace_tools.edit.EditFileParams")
        self.importers = _importers(tree)
        self.depth = 0  # inside Run._step
        self.restore: Any = None
        #: the ids of the call's arguments as the model sent them (a dict), kept alive in ``kept``
        self.arguments: set[int] = set()
        self.kept: list[Any] = []
        self.entered: set[int] = set()
        self.frames: list[Any] = []  # kept alive, so an id is never reused during the run

    def carries(self, value: Any) -> bool:
        if isinstance(value, self.carriers) or isinstance(value, self.params) or id(value) in self.arguments:
            for call in getattr(value, "calls", None) or [value]:  # the gate's turn holds the prepared calls
                if isinstance(call, self.carriers[0]):  # a prepared call: its arguments are the call's too
                    self.arguments.add(id(call.arguments))
                    self.kept.append(call.arguments)
            return True
        return isinstance(value, (list, tuple)) and bool(value) and any(self.carries(v) for v in value)

    def profile(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call" or not self.depth:
            return
        module = _module_of(frame.f_code.co_filename, self.tree)
        if module is None or id(frame) in self.entered:
            return  # not cog's, or a coroutine resumed: the walk entered it already
        self.entered.add(id(frame))
        self.frames.append(frame)
        code = frame.f_code
        if module.startswith("workspace_tools."):  # the tool's own code: where the walk goes, not the walk
            if code.co_name == "execute" and not self.walk.to_execution:
                self.walk.to_execution = len(self.walk.modules)
            return
        arguments = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if arguments and arguments[0] in ("self", "cls"):
            arguments = arguments[1:]  # the call's own methods are not a step of its walk
        if not any(self.carries(frame.f_locals.get(name)) for name in arguments):
            return
        caller = _caller_module(frame.f_back, self.tree)
        if caller is not None and caller.startswith("workspace_tools."):
            return  # called by the tool's own code (its preview or execute): still the tool's
        up = caller is not None and caller != module and module in self.importers.get(caller, ())
        self.walk.modules.append(module)
        self.walk.climbed.append(f"{caller} -> {module}.{code.co_name}" if up else None)

    def start(self) -> None:
        """Trace every ``Run._step`` from now on (in this thread and in worker threads)."""
        run = _first("cogcli.loop.run.Run", "cogcli.run.Run")
        step = run._step
        tracer = self

        async def traced(self: Any, turn: Any) -> Any:
            if not turn.calls:  # the model's last turn: no call to follow
                return await step(self, turn)
            tracer.depth += 1
            try:
                return await step(self, turn)
            finally:
                tracer.depth -= 1

        run._step, self.restore = traced, lambda: setattr(run, "_step", step)
        threading.setprofile(self.profile)
        sys.setprofile(self.profile)

    def stop(self) -> None:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]
        self.restore()


def _caller_module(frame: Any, tree: Path) -> str | None:
    while frame is not None:
        module = _module_of(frame.f_code.co_filename, tree)
        if module is not None:
            return module
        frame = frame.f_back
    return None


def _optional(path: str) -> Any:
    try:
        return _first(path)
    except ImportError:
        return None


def walk(tree: Path = ROOT) -> Walk:
    """The walk of one ``edit_file`` call in this process (``tree`` must be what ``cogcli`` is imported from)."""
    with tempfile.TemporaryDirectory() as folder:
        repo = Path(folder)
        (repo / "a.py").write_text("foo = 1\n")
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        tracer = _Tracer(tree)
        asyncio.run(_scenario(repo, tracer))
    return tracer.walk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT, help="the tree whose cogcli and workspace_tools to trace")
    args = parser.parse_args()
    tree = args.tree.resolve()
    sys.path.insert(0, str(tree))
    for name in [m for m in sys.modules if m.split(".")[0] in ("cogcli", "workspace_tools")]:
        del sys.modules[name]
    found = walk(tree)
    for title, end in (("through the gate and execution", found.to_execution), ("to the recorded step", None)):
        figures = found.figures(end)
        print(f"{tree} — {title}: {figures['modules']} modules, {figures['climbs']} climbs, {figures['returns']} returns")
        print("  " + " → ".join(figures["path"]))
        for climb in figures["climbed"]:
            print(f"  climb: {climb}")


if __name__ == "__main__":
    main()
