"""The library-level session (:class:`cogcli.session.Session`): used straight from Python it runs
the README demo (the calc cassette replayed on a copy of fixtures/calc) with the same events and
exit status as ``cog edit``, its ``undo`` puts the file back, and no module outside the command
line reaches up into ``cogcli.commands``."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CLEARED, REPLAY, run_cog

from cogcli.settings.load import load_settings
from cogcli.wire.events import BaseEvent
from render_helpers import event_line
from cogcli.session import Session, exit_status

ROOT = Path(__file__).resolve().parents[1]
OPS = Path("calc") / "ops.py"
#: what differs between two runs of one script: ids, times, durations, the test runner's own output
TIMING = re.compile(r"\d+(?:\.\d+)? ?s\b")
PYTHON = re.compile(r"bin/python3(?:\.\d+)?\b")
VOLATILE = {"id", "messageId", "threadId", "toolCallId", "timestamp", "durationMs", "startedAt", "endedAt", "start", "stop", "output_tail"}


def _same_run(event: dict[str, Any]) -> dict[str, Any]:
    """An event as JSON without what differs from run to run (ids, times, a test run's duration)."""

    def strip(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in VOLATILE and not k.startswith("duration")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        if isinstance(value, str):  # "3 passed in 0.02 s": a test run's time; bin/python or bin/python3
            return PYTHON.sub("bin/python", TIMING.sub("…s", value))
        return value

    return strip(event)


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment ``cog`` gets in :func:`cli_helpers.cog_env`: no COG_* settings, no personal AGENTS.md."""
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(Path(__file__).resolve().parent / "no-such-config-dir"))


def _kinds(events: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(e["type"], e.get("toolName"), e.get("status"), e.get("error")) for e in events]


@pytest.mark.anyio
async def test_a_session_runs_the_demo_as_cog_edit_does_and_undo_puts_the_file_back(
    make_repo: Callable[..., Path], clean_env: None
) -> None:
    by_cli = make_repo("calc", dest="by_cli/calc")  # one name: the system prompt names the repository
    done = run_cog(["edit", "--json", "--sandbox", "off", "--model", REPLAY, "Fix the failing test"], by_cli)
    cli_events = [json.loads(line) for line in done.stdout.splitlines()]

    repo = make_repo("calc", dest="by_session/calc")
    before = (repo / OPS).read_bytes()
    events: list[BaseEvent] = []
    async with Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo) as session:
        result = await session.run("Fix the failing test", on_event=events.append)
    lib_events = [json.loads(event_line(e)) for e in events]

    assert b"return a + b" in (repo / OPS).read_bytes() and b"return a + b" in (by_cli / OPS).read_bytes()
    assert _kinds(lib_events) == _kinds(cli_events)
    assert [_same_run(e) for e in lib_events] == [_same_run(e) for e in cli_events]
    assert lib_events[-1]["type"] == "finish" and lib_events[-1]["status"] == "completed"
    assert exit_status(result) == done.returncode == 0

    with Session(repo) as later:  # a new session of the workspace: the thread and its journal are on disk
        assert [t.id for t in later.threads()] == [result.thread_id]
        plan = later.undo()
    assert [f.path for f in plan.files] == [OPS.as_posix()]
    assert (repo / OPS).read_bytes() == before


@pytest.mark.anyio
async def test_a_session_calls_one_tool_as_cog_tool_does(make_repo: Callable[..., Path], clean_env: None) -> None:
    repo = make_repo("calc")
    session = Session(load_settings(repo, sandbox="off"), only=["read_file"])
    assert [t.name for t in session.tools] == ["read_file"]
    result = await session.invoke_tool("read_file", {"path": OPS.as_posix()})
    assert result.error is None and "return a - b" in str(result.result)
    missing = await session.invoke_tool("no_such_tool", {})
    assert missing.error_code == "TOOL_NOT_FOUND"
    done = run_cog(["tool", "--json", "-C", str(repo), "read_file", f"path={OPS.as_posix()}"], repo)
    shown = [json.loads(line) for line in done.stdout.splitlines()][-1]
    assert done.returncode == 0 and shown["type"] == "tool-result" and shown["result"] == result.result


def _imports(path: Path, module: str) -> set[str]:
    """The modules ``path`` (the module ``module``) imports, relative imports resolved."""
    found: set[str] = set()
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{a.name}" for a in node.names)
    return found


def test_only_the_command_line_imports_the_commands() -> None:
    package = ROOT / "cogcli"
    front = ("cogcli.cli", "cogcli.commands")
    offenders = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        if module == "cogcli.__main__" or any(module == f or module.startswith(f + ".") for f in front):
            continue
        for name in _imports(path, module):
            if name == "cogcli.commands" or name.startswith("cogcli.commands."):
                offenders.append(f"{module} imports {name}")
    assert offenders == []
    assert len(list(package.rglob("*.py"))) > 50  # the walk saw the package


@pytest.mark.anyio
async def test_a_run_that_breaks_unforeseen_says_where_not_only_at_debug_level(make_repo: Callable[..., Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """An unforeseen failure before the run starts is a RunNotStarted whose message names the
    exception and the place it broke (the traceback stays for -v), never only a debug log line."""
    from cogcli.session import RunNotStarted
    from cogcli.session import session as session_module

    repo = make_repo("calc")
    session = Session.open(load_settings(repo, model=REPLAY, sandbox="off"), cwd=repo)

    async def broken(*args: Any, **kwargs: Any) -> Any:
        raise KeyError("boom")

    monkeypatch.setattr(session, "_run", broken)
    with pytest.raises(RunNotStarted, match=r"the run failed: KeyError: 'boom' \(at .*test_session.py:\d+; cog -v shows the traceback\)"):
        await session.run("x")
    session.close()
    assert session_module.where_it_broke(ValueError("no frames")) == ""


def test_session_open_is_typed_with_the_keywords_of_session() -> None:
    """``Session.open(settings, **options)`` names its keywords (SessionOptions), the same as
    ``Session(…)``'s: a typo is a type error, not a surprise at run time."""
    import inspect
    from typing import get_type_hints

    from cogcli.session.factory import SessionOptions

    own = [p.name for p in inspect.signature(Session.__init__).parameters.values() if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert list(SessionOptions.__annotations__) == own
    assert "Unpack[SessionOptions]" in str(inspect.signature(Session.open).parameters["options"].annotation)
    assert get_type_hints(SessionOptions)["interactive"] == bool | None
