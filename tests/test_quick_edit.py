"""``cog edit`` without typer (issue 53, :func:`cogcli.cli.lean_start.quick_main`): the quick path
hands :func:`cogcli.commands.edit.edit_command` exactly what typer hands it, for every option
and for generated command lines; what it does not know goes to typer untouched; and ``cog
edit`` run this way imports no typer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cogcli.cli import lean_start
from cogcli.cli.lean_start import REWRITE, make_spec, parse, quick_main, spec_key

SPEC = json.loads((Path(lean_start.__file__).with_name(lean_start.SPEC_FILE)).read_text(encoding="utf-8"))
EDIT = SPEC["commands"]["edit"]


def test_the_kept_spec_is_typers_own_for_these_sources() -> None:
    import typer.main

    from cogcli.cli import app

    assert SPEC["key"] == spec_key(), f"cog edit's options changed; write the spec again: {REWRITE}"
    commands = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    assert SPEC["commands"] == {name: make_spec(commands[name]) for name in lean_start.QUICK}, f"the spec is not typer's; write it again: {REWRITE}"


class Captured(Exception):
    pass


BODIES = {name: (module, function) for name, (module, function, _) in lean_start.QUICK.items()}


def typer_params(argv: list[str], monkeypatch: pytest.MonkeyPatch, command: str = "edit") -> dict[str, Any] | None:
    """What typer hands the body for ``cog COMMAND argv`` (None: typer refused the command line)."""
    import importlib

    from typer.testing import CliRunner

    from cogcli.cli import app

    body = importlib.import_module(BODIES[command][0])

    seen: dict[str, Any] = {}

    def capture(**params: Any) -> int:
        seen.update(params)
        raise Captured

    monkeypatch.setattr(body, BODIES[command][1], capture)
    result = CliRunner().invoke(app, [command, *argv])
    if isinstance(result.exception, Captured):
        seen.pop("on_started", None)
        return seen
    # a usage error, or the help: never a crash
    assert result.exit_code == 2 or (result.exit_code == 0 and "Usage:" in result.output), (argv, result.output, result.exception)
    return None


def quick_params(argv: list[str], monkeypatch: pytest.MonkeyPatch, command: str = "edit") -> dict[str, Any] | None:
    import importlib

    body = importlib.import_module(BODIES[command][0])

    seen: dict[str, Any] = {}

    def capture(**params: Any) -> int:
        seen.update(params)
        return 0

    monkeypatch.setattr(body, BODIES[command][1], capture)
    code = quick_main([command, *argv])
    if code is None:
        return None
    assert code == 0, argv
    seen.pop("on_started", None)
    return seen


KNOWN = [
    [], ["say ok"], ["-"], ["--", "--not-an-option"], ["fix it", "--json"], ["--format", "jsonl", "x"], ["-f", "github", "x"],
    ["--format=jsonl", "x"], ["--thread", "--json"], ["--thread=abc", "--last"], ["-C", "/tmp", "x"], ["--directory", "sub", "x"],
    ["--image", "a.png", "--image", "b.png", "x"], ["--attempts", "3", "--ray", "x"], ["--attempts", "2", "--ray", "auto", "x"],
    ["--attempts=8", "x"], ["--model", "openai:gpt-4o", "-y", "x"], ["-m", "replay:c.jsonl", "--sandbox", "off", "x"],
    ["--max-steps", "30", "--timeout", "2.5", "x"], ["--no-diagnostics", "--diagnostics", "x"], ["--diagnostics", "--no-diagnostics", "x"],
    ["--mcp", "a b", "--mcp", "c", "--allow", "run_tests", "x"], ["--approval", "auto", "--reasoning", "high", "x"],
    ["--commit", "--allow-dirty", "--commit-hooks", "x"], ["--worktree", "--worktree-name", "w1", "x"], ["--plan", "--plan-allow", "run_tests", "x"],
    ["--output-schema", "s.json", "--file", "task.md"], ["--record", "c.jsonl", "x"], ["--context-window", "1024", "x"],
    ["--max-cost", "0.5", "--max-tokens", "1000", "x"], ["--keep-jobs", "--no-test-network", "x"], ["x", "--json", "--thread", "t"],
    # refused by typer: the quick path must leave them to it
    ["--attempts", "9", "x"], ["--attempts", "0", "x"], ["--attempts", "two", "x"], ["--format", "xml", "x"], ["--nope", "x"],
    ["a", "b"], ["--json=yes", "x"], ["--thread"], ["-yq", "x"], ["--sandbox", "maybe", "x"], ["--max-steps", "-3", "x"],
    ["--context-window", "10", "x"], ["--timeout", "1e3", "x"], ["--help"], ["x", "-h"], ["--max-steps", "+3", "x"],
]


@pytest.mark.parametrize("argv", KNOWN, ids=[" ".join(a) or "(none)" for a in KNOWN])
def test_the_quick_path_gives_what_typer_gives_or_leaves_the_line_to_typer(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    quick = quick_params(argv, monkeypatch)
    monkeypatch.undo()
    expected = typer_params(argv, monkeypatch)
    if quick is not None:
        assert quick == expected
    assert quick is not None or expected is None or argv in (["--help"], ["x", "-h"], ["--timeout", "1e3", "x"], ["--max-steps", "+3", "x"]), \
        f"typer took {argv} but the quick path left it (fine, but this table expects it known)"


def test_most_of_the_table_takes_the_quick_path(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = sum(parse(EDIT, argv) is not None for argv in KNOWN)
    assert taken >= 30


CHAT = [
    [], ["--thread", "abc"], ["--last"], ["--thread", "a", "--last"], ["-C", "sub"], ["--worktree"], ["--worktree-name=w"],
    ["--model", "openai:gpt-4o", "--yes", "--sandbox", "on"], ["--approval", "ask", "--no-diagnostics"], ["--mcp", "x", "--mcp", "y"],
    ["stray"], ["--attempts", "2"], ["--nope"], ["--max-steps", "0"], ["--help"],
]


@pytest.mark.parametrize("argv", CHAT, ids=[" ".join(a) or "(none)" for a in CHAT])
def test_cog_chat_takes_the_quick_path_as_typer_would(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    quick = quick_params(argv, monkeypatch, "chat")
    monkeypatch.undo()
    expected = typer_params(argv, monkeypatch, "chat")
    assert quick == expected or (quick is None and argv == ["--help"])


TOOL = [
    ["list_files"], ["read_file", "path=calc/ops.py"], ["run_tests", "paths=tests/a.py", "--", "-x", "--lf"], ["read_file", "--args", '{"path": "a"}'],
    ["list_files", "--json"], ["list_files", "-f", "github"], ["-C", "sub", "list_files"], ["list_files", "--sandbox", "off", "pattern=*.py"],
    ["run_command", "command=ls -la"], ["read_file", "--", "path=--x"], ["list_files", "a=1", "b=2", "c=3"],
    [], ["--nope", "x"], ["list_files", "--format", "xml"], ["--help"],
]
TOOLS = [[], ["--json"], ["-C", "sub"], ["--directory=sub", "--json"], ["extra"], ["--sandbox", "off"], ["-h"]]


@pytest.mark.parametrize("command,argv", [("tool", a) for a in TOOL] + [("tools", a) for a in TOOLS],
                         ids=[f"tool {' '.join(a)}" for a in TOOL] + [f"tools {' '.join(a)}" for a in TOOLS])
def test_cog_tool_and_tools_take_the_quick_path_as_typer_would(command: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    quick = quick_params(argv, monkeypatch, command)
    monkeypatch.undo()
    expected = typer_params(argv, monkeypatch, command)
    assert quick == expected or (quick is None and ("--help" in argv or "-h" in argv))


def _words() -> st.SearchStrategy[list[str]]:
    options = [opt for p in EDIT if p["kind"] == "option" for opt in (*p["opts"], *p.get("secondary", []))]
    values = st.sampled_from(["x", "0", "1", "8", "9", "2.5", "-1", "off", "on", "auto", "jsonl", "text", "high", "a=b", "--", "-", "", "--json", "--ray", "local", "h:1"])
    word = st.one_of(st.sampled_from(options), values, st.sampled_from([f"{o}=v" for o in options[:12]]))
    return st.lists(word, max_size=7)


@settings(max_examples=150, deadline=None)
@given(_words())
def test_generated_command_lines_parse_as_typer_parses_them(argv: list[str]) -> None:
    with pytest.MonkeyPatch.context() as monkeypatch:
        quick = quick_params(argv, monkeypatch)
    if quick is None:
        return
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert quick == typer_params(argv, monkeypatch), argv


def test_a_bad_setting_value_is_said_as_typer_says_it_and_exits_2(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """--timeout 0: typer takes the float, the setting's own check refuses it (the same words either way)."""
    assert quick_main(["edit", "--timeout", "0", "x"]) == 2
    said = capsys.readouterr().err
    assert "--timeout must be more than 0" in said
    from typer.testing import CliRunner

    from cogcli.cli import app

    result = CliRunner().invoke(app, ["edit", "--timeout", "0", "x"])
    assert result.exit_code == 2 and said.strip() in result.output


def test_cog_edit_imports_no_typer_and_runs(tmp_path: Path) -> None:
    """The whole quick path in a real process: the demo's cassette, no typer imported."""
    root = Path(__file__).resolve().parents[1]
    repo = tmp_path / "calc"
    import shutil

    shutil.copytree(root / "fixtures" / "calc", repo)
    subprocess.run(["git", "init", "-q", "."], cwd=repo, check=True)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("COG_MODEL", None)
    probe = ("import sys, runpy; sys.argv = ['cog', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('cogcli', run_name='__main__')\n"
             "finally:\n    sys.stderr.write('TYPER=%s' % ('typer' in sys.modules))\n")
    cassette = root / "fixtures" / "cassettes" / "calc_fix.jsonl"
    done = subprocess.run([sys.executable, "-c", probe, "edit", "--model", f"replay:{cassette}", "--yes", "Fix the failing test"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert "TYPER=False" in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    bad = subprocess.run([sys.executable, "-c", probe, "edit", "--attempts", "9", "x"], cwd=repo, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "TYPER=True" in bad.stderr and "--attempts" in bad.stderr  # typer said it


def test_a_stale_or_missing_spec_leaves_every_command_line_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A spec made from other sources (an option changed, the spec not written again) or none at
    all: the quick path takes nothing, and typer parses as it always did."""
    assert quick_params(["say ok"], monkeypatch) is not None  # the kept spec is current: taken
    monkeypatch.setattr(lean_start, "spec_key", lambda: "crc32:00000000")
    assert quick_main(["edit", "say ok"]) is None
    monkeypatch.undo()
    monkeypatch.setattr(lean_start, "SPEC_FILE", "no-such-file.json")
    assert quick_main(["tools"]) is None


@pytest.mark.parametrize("argv", [["tools"], ["tool", "list_files"]])
def test_stdout_gone_ends_quietly_as_typer_ends(argv: list[str], tmp_path: Path) -> None:
    """``cog tools | head -1``: the reader went away before cog wrote; the quick path ends as typer
    does (the same exit code: 1 for a listing, the call's own for a tool), and without a traceback."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    subprocess.run(["git", "init", "-q", "."], cwd=repo, check=True)
    env = {**os.environ, "HOME": str(tmp_path), "XDG_STATE_HOME": str(tmp_path / "state"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    ended = []
    for how in (["-m", "cogcli"], ["-c", "from cogcli.cli import app; app(prog_name='cog')"]):  # the quick path; typer
        read, write = os.pipe()
        os.close(read)  # nobody reads: every write fails with EPIPE
        try:
            done = subprocess.run([sys.executable, *how, *argv], cwd=repo, env=env, stdout=write, stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(write)
        assert "Traceback" not in done.stderr, done.stderr
        ended.append(done.returncode)
    assert ended[0] == ended[1] and (ended[0] == 1 if argv == ["tools"] else True)
