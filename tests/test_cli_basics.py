"""`cog` start-up, help, schema, render and configuration errors — through the real console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import cog_env, run_cog
from render_helpers import demo_events, event_line, DEMO_TEXT

from cogcli.settings.load import DEFAULT_MAX_STEPS, find_workspace, load_settings
from cogcli.contract.errors import ConfigError
from cogcli.wire.events import events_json_schema, parse_event

EAGER_FORBIDDEN = ("httpx", "git", "mcp", "cogcli.models.openai", "cogcli.models.anthropic", "workspace_tools", "rich", "genai_prices", "ray")


def test_help_imports_no_model_client_http_git_or_mcp() -> None:
    code = (
        "import sys\n"
        "from cogcli.cli import app\n"
        "try:\n"
        "    app(['--help'], prog_name='cog')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        f"bad = sorted(m for m in sys.modules if any(m == f or m.startswith(f + '.') for f in {EAGER_FORBIDDEN!r}))\n"
        "print('LOADED', bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.returncode == 0, out.stderr
    assert "Exit codes:" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "LOADED []"


def _loaded_after(args: list[str], cwd: Path, watched: tuple[str, ...], *, deferred: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Run ``cog ARGS`` in a fresh interpreter; the ``watched`` modules (and their submodules) it
    imported, and which of the ``deferred`` pydantic models (``module:Class``) it built."""
    code = (
        "import importlib, sys\n"
        "from cogcli.cli import app\n"
        "try:\n"
        f"    app({args!r}, prog_name='cog')\n"
        "except SystemExit as exc:\n"
        "    assert exc.code in (0, None), exc.code\n"
        f"bad = sorted(m for m in sys.modules if any(m == w or m.startswith(w + '.') for w in {watched!r}))\n"
        "built = []\n"
        f"for spec in {deferred!r}:\n"
        "    module, name = spec.split(':')\n"
        "    if module in sys.modules and getattr(sys.modules[module], name).__pydantic_complete__:\n"
        "        built.append(spec)\n"
        "print('LOADED', bad)\n"
        "print('BUILT', built)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[-2].startswith("LOADED ") and lines[-1].startswith("BUILT "), out.stdout
    return eval(lines[-2].removeprefix("LOADED ")), eval(lines[-1].removeprefix("BUILT "))


#: what listing or calling one tool never needs: the model clients, the web stack, git, the event
#: loop's threads, the models of a run (start-up, issue 18)
TOOL_FORBIDDEN = ("httpx", "git", "mcp", "rich", "cogcli.models.openai", "cogcli.models.anthropic", "cogcli.models.replay",
                  "starlette", "uvicorn", "cogcli.server", "cogcli.loop.runtime", "cogcli.loop.turn")


def test_cog_tools_imports_no_event_loop_events_or_details(tmp_path: Path) -> None:
    """`cog tools` lists names, descriptions and parameter schemas: no asyncio, no event or details
    models, no tool call machinery, nothing that only making a diff or journaling a change needs."""
    watched = (*TOOL_FORBIDDEN, "asyncio", "anyio", "cogcli.contract.context", "cogcli.wire.events", "cogcli.contract.details", "cogcli.contract.invoke", "cogcli.threads.entries",
               "cogcli.contract.diffstat", "workspace_tools.text.diffs", "workspace_tools.files.closest", "workspace_tools.files.journal")
    loaded, _ = _loaded_after(["tools", "-C", str(tmp_path)], tmp_path, watched)
    assert loaded == []


def test_cog_tool_imports_only_the_tool_it_calls(tmp_path: Path) -> None:
    """`cog tool list_files` makes one tool: the other tools' modules (and the test runners) are
    not imported, and the event, entry and details models it does not send are not built."""
    (tmp_path / "a.py").write_text("x = 1\n")
    watched = (*TOOL_FORBIDDEN, "workspace_tools.files.edit", "workspace_tools.files.write", "workspace_tools.files.search", "workspace_tools.git.changes",
               "workspace_tools.runners.run_tests", "workspace_tools.runners")
    deferred = ("cogcli.wire.events:FinishEvent", "cogcli.wire.events:CompactionEvent", "cogcli.threads.entries:UserEntry", "cogcli.models.base:Message",
                "cogcli.contract.details:FileEditDetails", "cogcli.contract.details:SearchDetails")
    loaded, built = _loaded_after(["tool", "list_files", "-C", str(tmp_path)], tmp_path, watched, deferred=deferred)
    assert loaded == []
    assert built == []


def test_help_documents_the_exit_codes(tmp_path: Path) -> None:
    for args in (["--help"], ["edit", "--help"]):
        out = run_cog(args, tmp_path)
        assert out.returncode == 0
        for line in ("0    done, and the last test run (if any) passed", "1    the run finished but the task failed", "2    usage or configuration error", "130  interrupted by Ctrl-C"):
            assert line in out.stdout


def test_schema_events_is_the_exported_event_schema(tmp_path: Path) -> None:
    out = run_cog(["schema", "events"], tmp_path)
    assert out.returncode == 0
    assert json.loads(out.stdout) == json.loads(json.dumps(events_json_schema()))
    presentation = json.loads(run_cog(["schema", "presentation"], tmp_path).stdout)
    assert presentation["required"] == ["label"] and set(presentation["properties"]) >= {"label", "icon", "detail"}
    bad = run_cog(["schema", "bogus"], tmp_path)
    assert bad.returncode == 2 and bad.stdout == ""


# --- cog render ---------------------------------------------------------------------------


def _stream(tmp_path: Path, extra: dict[int, str] | None = None) -> Path:
    lines = [event_line(e) for e in demo_events()]
    for at, line in sorted((extra or {}).items()):
        lines.insert(at, line)
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_render_draws_a_saved_stream_from_a_file_and_from_stdin(tmp_path: Path) -> None:
    path = _stream(tmp_path)
    from_file = run_cog(["render", str(path)], tmp_path)
    assert (from_file.returncode, from_file.stdout, from_file.stderr) == (0, DEMO_TEXT, "")
    from_stdin = run_cog(["render", "-"], tmp_path, input=path.read_text(encoding="utf-8"))
    assert (from_stdin.returncode, from_stdin.stdout) == (0, DEMO_TEXT)
    default_stdin = run_cog(["render"], tmp_path, input=path.read_text(encoding="utf-8"))
    assert default_stdin.stdout == DEMO_TEXT


def test_render_reports_malformed_lines_by_number_skips_unknown_types_and_never_tracebacks(tmp_path: Path) -> None:
    path = _stream(
        tmp_path,
        {
            1: "{this is not json",
            3: json.dumps({"type": "hologram", "seq": 99}),
            4: json.dumps({"type": "tool-result", "id": "x"}),
            5: "[1, 2]",
            6: "",
        },
    )
    out = run_cog(["render", str(path)], tmp_path)
    assert out.returncode == 0
    assert out.stdout == DEMO_TEXT
    assert out.stderr.splitlines() == [
        "cog render: line 2: not JSON: Expecting property name enclosed in double quotes at position 1; skipped",
        "cog render: line 5: invalid tool-result event: toolCallId: Field required; skipped",
        "cog render: line 6: not a JSON object; skipped",
    ]
    assert "Traceback" not in out.stderr


def test_render_of_binary_garbage_or_a_missing_file(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_bytes(b"\xff\xfe\x00garbage\n\x80\x81\n")
    out = run_cog(["render", str(junk)], tmp_path)
    assert out.returncode == 0 and out.stdout == "" and "Traceback" not in out.stderr
    assert [l.split(":")[0] for l in out.stderr.splitlines()] == ["cog render", "cog render"]
    missing = run_cog(["render", str(tmp_path / "nope.jsonl")], tmp_path)
    assert missing.returncode == 2
    assert missing.stderr.startswith("cog: cannot read ") and "nope.jsonl" in missing.stderr


def test_render_github_format(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    out = run_cog(["render", "--format", "github", str(_stream(tmp_path))], tmp_path, env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines.count("::endgroup::") == 5
    assert "::group::Read file  calc/ops.py" in lines
    assert lines.count("::group::Run tests") == 2  # calls with updates open with what is known then
    assert "::error file=calc/nope.py,title=cog%3A Edit file failed::Edit file  calc/nope.py — FILE_NOT_FOUND: calc/nope.py does not exist" in lines
    assert not any(l.startswith("::error file=tests/test_ops.py") for l in lines)  # the last test run passed
    assert lines[-1] == "Done · 5 steps · 1 file changed (+1 -1) · 3 tests passed · 5,392 tokens"
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("### cog edit\n\nDone · 5 steps")
    assert "| `calc/ops.py` | 1 | 1 |" in text and "All tests pass." in text


# --- configuration and its errors (exit 2) ------------------------------------------------


def test_no_model_anywhere_exits_2_saying_exactly_how_to_configure_one(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "Fix the failing test"], repo)
    assert out.returncode == 2
    assert out.stdout == ""
    for needle in ("--model openai:gpt-4o-mini", "OPENAI_API_KEY", "anthropic:", "ANTHROPIC_API_KEY", "ollama:", "--model replay:fixtures/cassettes/calc_fix.jsonl", "COG_MODEL", "[tool.cog]"):
        assert needle in out.stderr
    assert "Traceback" not in out.stderr


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["--model", "gpt4"], {}, "must be written provider:model"),
        (["--model", "bogus:x"], {}, "unknown model provider 'bogus'"),
        (["--model", "openai:gpt-4o-mini"], {}, "set OPENAI_API_KEY"),
        (["--model", "anthropic:claude-sonnet-4-5"], {}, "set ANTHROPIC_API_KEY"),
        ([], {"COG_MODEL": "nope:x"}, "unknown model provider 'nope'"),
        ([], {"COG_MODEL": "replay:x.jsonl", "COG_MAX_STEPS": "lots"}, "COG_MAX_STEPS must be a whole number, got 'lots'"),
    ],
)
def test_configuration_errors_exit_2_with_the_fix(make_repo, args, env, needle) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", *args, "Fix it"], repo, env=env)
    assert (out.returncode, out.stdout) == (2, "")
    assert needle in out.stderr
    assert "Traceback" not in out.stderr


def test_config_file_model_is_used_and_a_broken_file_is_named(make_repo) -> None:
    repo = make_repo("calc")
    pyproject = repo / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + '\n[tool.cog]\nmodel = "fromconfig:x"\n')
    out = run_cog(["edit", "Fix it"], repo)
    assert out.returncode == 2 and "unknown model provider 'fromconfig'" in out.stderr
    out = run_cog(["edit", "Fix it"], repo, env={"COG_MODEL": "fromenv:x"})
    assert "unknown model provider 'fromenv'" in out.stderr  # the environment beats the file
    out = run_cog(["edit", "--model", "fromflag:x", "Fix it"], repo, env={"COG_MODEL": "fromenv:x"})
    assert "unknown model provider 'fromflag'" in out.stderr  # the flag beats both
    pyproject.write_text("[tool.cog\nmodel = 1\n")
    out = run_cog(["edit", "Fix it"], repo)
    assert out.returncode == 2 and f"{pyproject} is not valid TOML" in out.stderr


def test_load_settings_precedence(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("COG_MODEL", "COG_TEST_COMMAND", "COG_MAX_STEPS", "COG_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    assert load_settings(tmp_path).model is None
    assert load_settings(tmp_path).max_steps == DEFAULT_MAX_STEPS
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cog]\nmodel = "ollama:a"\ntest_command = "pytest -x"\nmax_steps = 7\ntimeout = 9\nmcp_servers = ["srv one"]\n'
    )
    s = load_settings(tmp_path)
    assert (s.model, s.model_source, s.test_command, s.max_steps, s.timeout, s.mcp_servers) == ("ollama:a", "pyproject.toml", "pytest -x", 7, 9.0, ["srv one"])
    monkeypatch.setenv("COG_MODEL", "ollama:b")
    monkeypatch.setenv("COG_MAX_STEPS", "8")
    s = load_settings(tmp_path)
    assert (s.model, s.model_source, s.max_steps) == ("ollama:b", "COG_MODEL", 8)
    s = load_settings(tmp_path, model="ollama:c", max_steps=9, test_command="make test", mcp_servers=["other"])
    assert (s.model, s.model_source, s.max_steps, s.test_command, s.mcp_servers) == ("ollama:c", "--model", 9, "make test", ["other"])
    (tmp_path / "pyproject.toml").write_text("[tool.cog]\nmax_steps = 0\n")
    with pytest.raises(ConfigError, match=r"\[tool.cog\] max_steps in .*pyproject.toml: Input should be greater than or equal to 1"):
        load_settings(tmp_path)


def test_workspace_is_the_git_top_level(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    assert find_workspace(repo / "calc") == repo.resolve()
    plain = tmp_path / "plain"
    plain.mkdir()
    assert find_workspace(plain) == plain.resolve()  # given explicitly (-C): used as it is
    with pytest.raises(ConfigError, match="does not exist"):
        find_workspace(tmp_path / "missing")


def test_outside_a_repository_cog_says_so_and_offers_c_and_git_init(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "a.py").write_text("x = 1\n")
    out = run_cog(["tool", "list_files"], plain)
    assert out.returncode == 2 and out.stdout == ""
    assert "is not in a git repository" in out.stderr and "-C path/to/repo" in out.stderr and "git init" in out.stderr
    assert not (plain / ".cog").exists()  # nothing made in a folder cog was not asked to use
    explicit = run_cog(["tool", "-C", ".", "list_files"], plain)
    assert explicit.returncode == 0, explicit.stderr
    assert "a.py" in explicit.stdout


def test_every_demo_event_is_valid_against_the_schema() -> None:
    for event in demo_events():
        assert parse_event(event_line(event)) == event


def test_the_collector_is_back_on_when_a_command_does_its_work(tmp_path: Path) -> None:
    """`cog` keeps the cyclic garbage collector off while it starts (start-up, issue 18); a command
    that may run long (a thread listing here, the call of `cog tool`) runs with it on again."""
    code = (
        "import gc, sys\n"
        "import cogcli.commands.thread as thread, cogcli.commands.tool as tool\n"
        "from cogcli.cli import main\n"
        "def report(*args, **kwargs):\n"
        "    print('COLLECTING', gc.isenabled())\n"
        "    return 0\n"
        "thread.list_command = tool.call_tool = report\n"
        f"for argv in (['thread', 'list', '-C', {str(tmp_path)!r}], ['tool', 'list_files', '-C', {str(tmp_path)!r}]):\n"
        "    sys.argv = ['cog', *argv]\n"
        "    try:\n"
        "        main()\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), exc.code\n"
        "    gc.unfreeze()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.returncode == 0, out.stderr
    assert [line for line in out.stdout.splitlines() if line.startswith("COLLECTING")] == ["COLLECTING True"] * 2
