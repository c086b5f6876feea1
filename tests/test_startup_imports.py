"""What `cog edit` imports before its first model request (issue 53): only what that request needs.

Compares module sets, never times: a fresh `cog edit "say ok"` against a loopback OpenAI-compatible
server, with the modules loaded written down at the moment the model's connection opens."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import cog_env
from model_servers import OpenAIServer, Reply

#: sent the model request: sys.modules at that moment (the first bytes sent on a connection to
#: ``port``; a connection opens early, while the run is still being set up)
PROBE = """
import json, runpy, socket, sys
port, out = int(sys.argv[1]), sys.argv[2]
connect, send, sendall = socket.socket.connect, socket.socket.send, socket.socket.sendall
ours = set()
def watched(self, address):
    if isinstance(address, tuple) and address[1] == port:
        ours.add(id(self))
    return connect(self, address)
def noted(self):
    if id(self) in ours:
        ours.discard(id(self))
        with open(out, "a") as file:
            file.write(json.dumps(sorted(sys.modules)) + "\\n")
socket.socket.connect = watched
socket.socket.send = lambda self, data, *a: (noted(self), send(self, data, *a))[1]
socket.socket.sendall = lambda self, data, *a: (noted(self), sendall(self, data, *a))[1]
sys.argv = ["cog", *sys.argv[3:]]
runpy.run_module("cogcli", run_name="__main__")
"""

#: never needed by a run's first request: other front ends, git's library, MCP, the web stack,
#: httpx's command-line client (rich, pygments), trio, genai-prices (its answers are kept)
NOT_BEFORE_FIRST_REQUEST = (
    "git", "mcp", "starlette", "uvicorn", "sse_starlette", "fastapi", "websockets",
    "cogcli.server", "cogcli.acp", "cogcli.batch", "cogcli.adapters", "cogcli.mcp", "cogcli.chat",
    "cogcli.models.anthropic", "cogcli.models.openai_responses", "cogcli.threads.undo", "cogcli.threads.rewind",
    "httpx._main", "rich", "pygments", "click", "trio", "httpx2", "genai_prices",
    "openai", "anthropic", "pydantic_ai", "agents",
    "ray", "cogcli.commands.ray_attempts", "cogcli.worktrees.ship",  # only with cog edit --attempts N --ray
    # only `cog edit`'s own command is declared (typer builds the declared commands' parameters)
    "cogcli.cli.chat", "cogcli.cli.batch", "cogcli.cli.thread", "cogcli.cli.serve", "cogcli.cli.mcp_app", "cogcli.cli.acp",
)


def modules_at_first_request(repo: Path, state: Path, server: OpenAIServer) -> list[str]:
    """The modules a fresh `cog edit "say ok"` has loaded when it sends ``server`` the model request
    (the first bytes on a connection to it: the check that a local server listens sends none)."""
    out = repo.parent / f"modules-{len(server.requests)}.jsonl"
    env = cog_env({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "XDG_STATE_HOME": str(state)})
    port = server.base_url.split(":")[2].split("/")[0]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, port, str(out), "edit", "say ok", "-m", "openai:gpt-4o"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert len(lines) >= 1
    loaded: list[str] = json.loads(lines[-1])
    return loaded


def matching(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.slow
def test_cog_edit_imports_only_what_its_first_request_needs(make_repo: Any, tmp_path: Path) -> None:
    repo = make_repo("calc")
    state = tmp_path / "state"
    with OpenAIServer([Reply("ok"), Reply("ok")]) as server:
        first = modules_at_first_request(repo, state, server)  # looks the model up in genai-prices once
        again = modules_at_first_request(repo, state, server)
        assert len(server.requests) == 2

    # the probe saw the request's own needs: the HTTP client and the model's client
    assert {"httpx", "httpcore", "cogcli.models.openai", "cogcli.loop.run"} <= set(again)
    assert matching(again, NOT_BEFORE_FIRST_REQUEST) == []
    # the first run imported genai-prices for the model's window; the second read what it kept
    assert "genai_prices" in first
    # the first run made the workspace tools and kept their specs; the second told the model those
    # specs and made no tool before its request (cogcli.session.tool_specs)
    tool_modules = ("workspace_tools.runners", "workspace_tools.shell", "workspace_tools.diagnostics", "workspace_tools.git",
                    "workspace_tools.files.read", "workspace_tools.files.edit", "workspace_tools.files.search")
    assert matching(first, tool_modules) != []
    assert matching(again, tool_modules) == []


def test_genai_prices_answers_are_kept_only_for_the_data_that_gave_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.settings import price_data
    from cogcli.settings.prices import looked_up_price, maintained_price

    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    maintained_price.cache_clear()
    window = price_data.maintained_window("openai", "gpt-4o")
    price = maintained_price("openai", "gpt-4o")
    assert window == 128_000 and price == looked_up_price("openai", "gpt-4o") and price is not None
    kept = json.loads((tmp_path / "cog" / price_data.CACHE_FILE).read_text(encoding="utf-8"))
    assert (tmp_path / "cog" / price_data.CACHE_FILE).stat().st_mode & 0o077 == 0
    assert kept["models"]["openai:gpt-4o"]["window"] == 128_000

    # what is kept answers (a changed file shows it is read, not the library) ...
    kept["models"]["openai:gpt-4o"]["window"] = 4_096
    (tmp_path / "cog" / price_data.CACHE_FILE).write_text(json.dumps(kept), encoding="utf-8")
    assert price_data.maintained_window("openai", "gpt-4o") == 4_096
    # ... only for the same installed data: another genai-prices release looks it up again
    monkeypatch.setattr(price_data, "_data_stamp", lambda: "another release")
    assert price_data.maintained_window("openai", "gpt-4o") == 128_000
    maintained_price.cache_clear()


def test_a_state_folder_inside_the_workspace_never_sets_the_prices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from cogcli.settings import price_data
    from cogcli.settings.prices import looked_up_price, maintained_price

    workspace, home = tmp_path / "ws", tmp_path / "home"
    planted = workspace / "state" / "cog" / price_data.CACHE_FILE
    planted.parent.mkdir(parents=True)
    stamp = price_data._data_stamp()
    assert stamp is not None
    day = datetime.datetime.now(datetime.UTC).date().isoformat()
    free = {"input": 0.0, "output": 0.0, "cache_read": 0.0, "cache_write": 0.0, "cache_write_1h": None, "tiers": []}
    planted.write_text(json.dumps({"data": stamp, "models": {"openai:gpt-4o": {f"price {day}": free, "window": 1}}}), encoding="utf-8")
    monkeypatch.setenv("XDG_STATE_HOME", str(workspace / "state"))  # what a test in the workspace could write
    monkeypatch.setenv("HOME", str(home))
    maintained_price.cache_clear()
    try:
        # without a workspace named, the folder is the person's choice: the file is read
        monkeypatch.setattr(price_data, "_workspace", None)
        assert maintained_price("openai", "gpt-4o").input == 0.0  # type: ignore[union-attr]
        maintained_price.cache_clear()
        # a session names its workspace: the folder inside it gives way to the default
        price_data.use_workspace(workspace)
        assert maintained_price("openai", "gpt-4o") == looked_up_price("openai", "gpt-4o")
        assert price_data.maintained_window("openai", "gpt-4o") == 128_000
        assert (home / ".local" / "state" / "cog" / price_data.CACHE_FILE).exists()
    finally:
        maintained_price.cache_clear()


#: ``sys.modules`` when a fresh ``cog ARGS…`` ends (printed on stderr at exit)
AT_EXIT = """
import atexit, json, runpy, sys
atexit.register(lambda: sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n"))
sys.argv = ["cog", *sys.argv[1:]]
runpy.run_module("cogcli", run_name="__main__")
"""

#: the modules of cogcli.cli that declare the other commands, and what only a run needs
NOT_FOR_COG_TOOLS = (
    "cogcli.cli.edit", "cogcli.cli.chat", "cogcli.cli.batch", "cogcli.cli.thread", "cogcli.cli.serve",
    "cogcli.cli.mcp_app", "cogcli.cli.acp", "cogcli.cli.settings", "cogcli.cli.worktree",
    "cogcli.loop", "cogcli.models", "cogcli.threads", "cogcli.render",
    "httpx", "httpcore", "anyio", "git", "mcp", "starlette", "uvicorn", "genai_prices", "rich", "click",
)


def modules_of_cog(args: list[str], cwd: Path) -> list[str]:
    done = subprocess.run([sys.executable, "-c", AT_EXIT, *args], cwd=cwd, env=cog_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
    loaded: list[str] = json.loads(line.removeprefix("MODULES "))
    return loaded


def test_cog_tools_declares_and_imports_only_its_own_command(make_repo: Any) -> None:
    """typer builds every declared command's parameters at start: `cog tools` declares only its
    own module of cogcli.cli (issue 53), and `cog --help` still declares (and lists) them all."""
    repo = make_repo("calc")
    tools = modules_of_cog(["tools"], repo)
    assert "cogcli.commands.tool" in tools and "workspace_tools.runners" in tools  # it did list the tools
    assert "typer" not in tools and "cogcli.cli.typer_app" not in tools  # the quick path (cogcli.cli.lean_start)
    assert matching(tools, NOT_FOR_COG_TOOLS) == []
    assert matching(modules_of_cog(["-v", "tools"], repo), NOT_FOR_COG_TOOLS) == []  # cog's own flag first

    every = modules_of_cog(["--help"], repo)
    assert {"cogcli.cli.edit", "cogcli.cli.batch", "cogcli.cli.worktree", "cogcli.cli.thread"} <= set(every)


#: what a one-off `cog tool list_files` never needs: other commands, a run's machinery, other tools'
#: modules (only the tool called is made), and OpenTelemetry with nothing in the process using it
NOT_FOR_ONE_TOOL = (
    *NOT_FOR_COG_TOOLS[: NOT_FOR_COG_TOOLS.index("cogcli.render")], "httpx", "httpcore", "git", "mcp", "starlette", "uvicorn",
    "genai_prices", "rich", "click",
    "cogcli.hooks", "cogcli.compaction", "cogcli.gate", "cogcli.project", "cogcli.agent_tools", "cogcli.worktrees",
    "cogcli.wire.telemetry", "cogcli.wire.coalesce", "cogcli.render.jsonl", "cogcli.render.github",
    "workspace_tools.runners", "workspace_tools.shell", "workspace_tools.diagnostics", "workspace_tools.git",
    "workspace_tools.files.read", "workspace_tools.files.edit", "workspace_tools.files.search", "workspace_tools.files.journal",
    "opentelemetry",
)


def test_a_one_off_cog_tool_imports_only_its_call(make_repo: Any) -> None:
    """`cog tool list_files` (issue 53): its tool's module, the session, the contract's one path
    (validate, run, redact), the wire events and the text renderer that draw it — nothing else.
    The first call keeps the tools' specs; the second makes only the tool it calls."""
    repo = make_repo("calc")
    first = modules_of_cog(["tool", "list_files"], repo)
    again = modules_of_cog(["tool", "list_files"], repo)
    for loaded in (first, again):
        # it did validate the call, run it and redact it, and drew it from the wire events
        assert {"workspace_tools.files.list", "cogcli.contract.invoke", "cogcli.secrets.redactor",
                "cogcli.wire.events", "cogcli.render.text", "workspace_tools.sandbox.bwrap"} <= set(loaded)
        assert matching(loaded, NOT_FOR_ONE_TOOL) == []


def test_the_command_line_names_the_module_to_declare() -> None:
    from cogcli.cli import invoked

    assert invoked(["tools", "--json"]) == "tool"
    assert invoked(["-v", "thread", "show", "x"]) == "thread"
    assert invoked(["batch", "run"]) == "batch"
    # no command, a help or version flag first, or a name cog does not know: every command declared
    assert invoked([]) is None and invoked(["--help", "tools"]) is None and invoked(["--version"]) is None
    assert invoked(["tols"]) is None


def test_the_command_line_looks_up_no_pydantic_plugins_unless_the_person_asks(make_repo: Any, tmp_path: Path) -> None:
    """pydantic reads every installed distribution's entry points on its first validator (and
    imports importlib.metadata for it); `cog` tells it there are none — a person's
    PYDANTIC_DISABLE_PLUGINS, even empty, gets pydantic's own lookup back."""
    site = tmp_path / "site"
    (site / "cog_probe_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "cog_probe_plugin-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: cog-probe-plugin\nVersion: 1.0\n")
    (site / "cog_probe_plugin-1.0.dist-info" / "entry_points.txt").write_text("[pydantic]\nprobe = cog_probe_plugin:plugin\n")
    marker = tmp_path / "loaded"
    (site / "cog_probe_plugin.py").write_text(
        "import os\n"
        f"open({str(marker)!r}, 'a').write('loaded\\n')\n"
        "class _Plugin:\n"
        "    def new_schema_validator(self, *args, **kwargs):\n"
        "        return None, None, None\n"
        "plugin = _Plugin()\n"
    )
    repo = make_repo("calc")

    def tools(extra: dict[str, str]) -> list[str]:
        env = cog_env({"PYTHONPATH": str(site), **extra})
        done = subprocess.run([sys.executable, "-c", AT_EXIT, "tools", "--json"], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
        assert json.loads(done.stdout[: done.stdout.rindex("]") + 1])  # it listed the tools (validating settings and params)
        line = next(line for line in done.stderr.splitlines() if line.startswith("MODULES "))
        loaded: list[str] = json.loads(line.removeprefix("MODULES "))
        return loaded

    plain = tools({})
    assert not marker.exists() and "importlib.metadata" not in plain
    asked = tools({"PYDANTIC_DISABLE_PLUGINS": ""})
    assert marker.read_text() == "loaded\n" and "importlib.metadata" in asked


def test_pydantic_plugins_are_left_alone_outside_the_command_line() -> None:
    """`import cogcli` in another program changes nothing of pydantic's (a fresh interpreter)."""
    code = "import cogcli, pydantic\nclass M(pydantic.BaseModel):\n    x: int\nM(x=1)\nimport sys\nprint('importlib.metadata' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], env=cog_env(), capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "True", done.stderr
