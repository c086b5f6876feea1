"""A newcomer's mistakes end in a message that names the fix (issue 43): a mistyped tool,
parameter or provider gets a "did you mean", a local model server that is not running exits 2 with
how to start it, plain `cog` (the chat) says how to set a model for the chat, a run off a terminal
stops at its first refusal and says how to allow, and the last line speaks plainly."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path

import pexpect
from cli_helpers import cog_argv, cog_env, json_lines, run_cog
from conftest import FIXTURES

REPLAY = f"replay:{FIXTURES / 'cassettes' / 'calc_fix.jsonl'}"
FIX = "Fix the failing test"


def _free_port() -> int:
    """A loopback port nothing listens on (bound and closed again)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_mistyped_tool_or_parameter_says_which_was_meant(make_repo) -> None:
    repo = make_repo("calc")
    tool = run_cog(["tool", "read_fil", "path=calc/ops.py"], repo)
    assert tool.returncode == 2
    assert "unknown tool 'read_fil'; did you mean read_file?" in tool.stdout + tool.stderr
    param = run_cog(["tool", "read_file", "path=calc/ops.py", "offst=3"], repo)
    shown = param.stdout + param.stderr
    assert param.returncode == 2
    assert "offst: read_file takes no such parameter (did you mean offset?)" in shown
    assert "read_file's parameters: path (required), offset, limit" in shown
    nothing_close = run_cog(["tool", "read_file", "path=calc/ops.py", "zzz=1"], repo)
    assert "zzz: read_file takes no such parameter\n" in nothing_close.stdout + "\n" and "did you mean" not in nothing_close.stdout


def test_a_mistyped_provider_says_which_was_meant(make_repo) -> None:
    out = run_cog(["edit", "--model", "opnai:gpt-4o", FIX], make_repo("calc"))
    assert out.returncode == 2
    assert "unknown model provider 'opnai' in 'opnai:gpt-4o'; did you mean openai:gpt-4o?" in out.stderr


def test_ollama_not_running_exits_2_saying_how_to_start_it(make_repo) -> None:
    repo = make_repo("calc")
    # nothing listens at this loopback address: what a person whose Ollama is not running gets
    # (OLLAMA_HOST, as Ollama itself reads it, points cog at a port that is surely closed)
    port = _free_port()
    out = run_cog(["edit", "--json", "--yes", "--model", "ollama:llama3.1", FIX], repo, env={"OLLAMA_HOST": f"127.0.0.1:{port}"})
    events = json_lines(out.stdout)
    assert out.returncode == 2, out.stderr
    assert events[-1]["type"] == "finish" and events[-1]["status"] == "error"
    error = next(e for e in events if e["type"] == "error")
    assert error["code"] == "MODEL_CONFIG_ERROR"
    assert f"cannot connect to http://127.0.0.1:{port}/v1/chat/completions: connection refused" in error["message"]
    assert "Is Ollama running? Start it with `ollama serve`" in error["message"] and "`ollama pull llama3.1`" in error["message"]
    # checked once, before the run: no retries, no thread stored (issue 49)
    assert "retry" not in out.stderr and events[-1]["threadId"] == "" and not (repo / ".cog").exists()


def test_a_local_openai_compatible_server_that_is_down_is_said_once_and_nothing_is_stored(make_repo) -> None:
    """Issue 49: `openai:` at a loopback base URL nothing listens on (Ollama's port, or another)
    exits 2 at once with how to start the server, one message, no thread, no "Failed · 1 step"."""
    repo = make_repo("calc")
    port = _free_port()
    out = run_cog(["edit", "--yes", "--model", "openai:qwen2.5-coder", FIX], repo, env={"OPENAI_BASE_URL": f"http://localhost:{port}/v1"})
    assert out.returncode == 2, out.stderr
    said = [line for line in out.stderr.splitlines() if line.startswith("cog: ")]
    assert said == [f"cog: openai:qwen2.5-coder: cannot connect to http://localhost:{port}/v1/chat/completions: connection refused "
                    f"(nothing listens there). Is the model server at http://localhost:{port}/v1 running? Start it (llama.cpp's "
                    "llama-server, vLLM, LM Studio, …), or point OPENAI_BASE_URL (or [providers] base_url in your config) at one that is"], out.stderr
    assert "Failed" not in out.stdout and "Traceback" not in out.stderr and not (repo / ".cog").exists()


def test_the_hint_at_ollamas_port_is_ollamas(make_repo) -> None:
    from cogcli.models import get_model

    model = get_model("openai:llama3.1", base_url="http://127.0.0.1:11434/v1")
    assert "Is Ollama running? Start it with `ollama serve`" in model.connect_hint and "`ollama pull llama3.1`" in model.connect_hint  # type: ignore[attr-defined]
    assert get_model("openai:gpt-4o", base_url="http://10.0.0.5:8000/v1").connect_hint is None  # type: ignore[attr-defined]


def test_ollama_host_is_read_as_ollama_reads_it(monkeypatch) -> None:
    from cogcli.models import get_model

    for host, url in [("127.0.0.1:9999", "http://127.0.0.1:9999/v1"), ("0.0.0.0", "http://127.0.0.1:11434/v1"),
                      ("https://box.lan:8443/", "https://box.lan:8443/v1"), ("", "http://localhost:11434/v1")]:
        monkeypatch.setenv("OLLAMA_HOST", host)
        assert get_model("ollama:qwen2.5-coder").base_url == url  # type: ignore[attr-defined]
    # a remote API that does not answer may be down for a while: an ordinary stream error (exit 1)
    assert get_model("openai:gpt-4o", api_key="k").connect_hint is None  # type: ignore[attr-defined]


def test_plain_cog_without_a_model_says_how_to_set_one_for_the_chat(make_repo, tmp_path: Path) -> None:
    repo = make_repo("calc")
    env = cog_env({"XDG_CONFIG_HOME": str(tmp_path / "config"), "PROMPT_TOOLKIT_NO_CPR": "1"}, ci=False)
    env.pop("COG_MODEL", None)
    argv = cog_argv()
    child = pexpect.spawn(argv[0], argv[1:], cwd=str(repo), env=env, encoding="utf-8", timeout=60, dimensions=(40, 140))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 2
    assert "cog chat --model openai:gpt-4o-mini" in child.before and "cog edit --model" not in child.before


def test_off_a_terminal_a_run_stops_at_its_first_refusal_and_says_how_to_allow(make_repo) -> None:
    repo = make_repo("calc")
    argv = cog_argv()
    env = cog_env(None, ci=False)
    env.pop("CI", None)
    out = subprocess.run([*argv, "edit", "--model", REPLAY, FIX], cwd=repo, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=180, start_new_session=True)  # no controlling terminal
    assert out.returncode == 1, out.stderr
    assert "pass --yes (or --approval auto)" in out.stderr and "--approval stdin" in out.stderr
    last = out.stdout.splitlines()[-1]
    # the demo's second step asks to run the tests: refused, and no third (paid) step follows
    assert last.startswith("Denied · 2 steps · tests did not run"), last
    assert (repo / "calc" / "ops.py").read_text() == (FIXTURES / "calc" / "calc" / "ops.py").read_text()


def test_the_demo_follow_ups_work_where_the_demo_ran(tmp_path: Path) -> None:
    """The README's demo makes its copy a repository, so the follow-ups it prints work there."""
    demo = tmp_path / "calc"
    shutil.copytree(FIXTURES / "calc", demo)
    subprocess.run(["git", "init", "-q", str(demo)], check=True)
    first = run_cog(["edit", "-C", str(demo), "--yes", "--model", REPLAY, FIX], tmp_path)
    assert first.returncode == 0, first.stderr
    hint = next(line for line in first.stderr.splitlines() if "continue it:" in line)
    assert f"cog edit -C {demo} --thread thr_" in hint  # started elsewhere: the hint says where
    assert run_cog(["thread", "list"], demo).returncode == 0
    undo = run_cog(["undo"], demo)
    assert undo.returncode == 0, undo.stderr
    assert "return a - b" in (demo / "calc" / "ops.py").read_text()


def test_cog_tools_lists_the_tools_outside_a_git_repository(tmp_path: Path) -> None:
    """Issue 49: listing the tools needs no repository (a run still does); nothing is written."""
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "test_x.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    out = run_cog(["tools"], folder)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("read_file(") and "run_tests(" in out.stdout and "here: pytest" in out.stdout
    assert sorted(p.name for p in folder.iterdir()) == ["test_x.py"]
    listed = run_cog(["tools", "--json"], folder)
    assert listed.returncode == 0 and any(t["name"] == "edit_file" for t in json.loads(listed.stdout))
    edit = run_cog(["edit", "--model", REPLAY, FIX], folder)  # a run still wants a repository, and says how
    assert edit.returncode == 2 and "git init" in edit.stderr


def test_a_missing_node_modules_is_said_once_by_cog_tool(tmp_path: Path) -> None:
    """Issue 49: `cog tool run_tests` drew the runner's notes, then the content that holds them again."""
    from runner_fixtures import need

    need("npm", "apt install nodejs npm")
    repo = tmp_path / "web"
    repo.mkdir()
    # ava: a runner cog does not drive (mocha it now drives itself), so `npm test` runs as written
    (repo / "package.json").write_text('{"name": "web", "scripts": {"test": "ava"}, "devDependencies": {"ava": "^6"}}\n', encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = run_cog(["tool", "run_tests", "--sandbox", "off"], repo)
    assert out.returncode == 1, out.stdout + out.stderr
    said = "command not found: ava — the test script runs it from node_modules/.bin, which is not installed: run `npm ci`"
    assert out.stdout.count(said) == 1, out.stdout
    assert out.stdout.count("counts unavailable: the test script (`ava`)") == 1 and "Output (end):" in out.stdout
