"""`cog chat` draws its prompt before its session is built (issue 53), on a real terminal (a pty
driven by pexpect) against a loopback model server.

To hold the set-up open for as long as a test needs, the chat's process is given a
``sitecustomize`` (this test's, on ``PYTHONPATH``; cog has no such hook) that makes
:meth:`Session.build` wait for a gate file the test creates, and writes ``building`` when it
starts: what the chat does meanwhile is then seen for certain, not raced."""

from __future__ import annotations

import time
from pathlib import Path

import pexpect
import pytest
from cli_helpers import repo_with
from model_servers import OpenAIServer, Reply
from test_chat import PROMPT, chat, leave, send, server_env

from cogcli.contract.errors import ConfigError
from cogcli.session import make_model
from cogcli.settings.load import load_settings
from cogcli.settings.options import SettingFlags

GATED_BUILD = '''
import os, pathlib, time
from cogcli.session.session import Session

_build = Session.build

def build(self):
    gate = pathlib.Path(os.environ["CHAT_TEST_GATE"])
    (gate.parent / "building").touch()
    while not gate.exists():
        time.sleep(0.02)
    _build(self)
    (gate.parent / "built").touch()

Session.build = build
'''


def gated_env(tmp_path: Path, server: OpenAIServer) -> tuple[dict[str, str], Path]:
    """The chat's environment with its set-up held until the returned gate file exists."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(GATED_BUILD)
    return server_env(server, PYTHONPATH=str(site), CHAT_TEST_GATE=str(site / "gate")), site / "gate"


def wait_for(path: Path, timeout: float = 30) -> None:
    end = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < end, f"{path.name} never came"
        time.sleep(0.02)


def test_the_prompt_takes_keys_while_the_session_is_built_and_a_line_sent_meanwhile_waits(tmp_path: Path) -> None:
    # a named agent without a description: the set-up says so (a note), above the prompt
    repo = repo_with(tmp_path, {"a.py": "x = 1\n", ".agents/agents/helper.md": "---\nname: helper\n---\n"})
    with OpenAIServer([Reply("x is one.")]) as server:
        env, gate = gated_env(tmp_path, server)
        with chat(repo, env) as child:
            child.expect(PROMPT)
            wait_for(gate.parent / "building")
            send(child, "/help")  # needs no session: answered while it is built
            child.expect("Commands:")
            child.expect(PROMPT)
            child.send("what is")
            child.expect("what is")  # echoed: the line editor reads keys
            send(child, " x?")
            child.expect("setting up…")  # the line waits for the session
            time.sleep(0.3)
            assert not server.requests and not (gate.parent / "built").exists()
            gate.touch()
            child.expect(r"helper\.md left out: it needs a description")  # the set-up's note, said
            child.expect("x is one.")
            child.expect(r"Done · 1 step")
            child.expect(PROMPT)
            assert leave(child) == 0
            assert "Traceback" not in (child.before or "")
    assert [m["content"] for m in server.requests[0].body["messages"] if m["role"] == "user"] == ["what is x?"]


def test_ctrl_d_while_the_session_is_built_leaves_once_it_is_and_closes_it(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([]) as server:
        env, gate = gated_env(tmp_path, server)
        with chat(repo, env) as child:
            child.expect(PROMPT)
            wait_for(gate.parent / "building")
            child.sendeof()
            time.sleep(0.3)
            assert child.isalive()  # the set-up ends first: a session half built is never closed
            gate.touch()
            child.expect(pexpect.EOF)
            child.close()
            assert child.exitstatus == 0
            assert "Traceback" not in (child.before or "")
    assert (gate.parent / "built").exists()


def test_ctrl_c_while_a_line_waits_for_the_set_up_leaves_quietly_once_it_ended(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([]) as server:
        env, gate = gated_env(tmp_path, server)
        with chat(repo, env) as child:
            child.expect(PROMPT)
            wait_for(gate.parent / "building")
            send(child, "hello")
            child.expect("setting up…")
            child.sendcontrol("c")  # the terminal's again between prompts: SIGINT
            time.sleep(0.3)
            assert child.isalive()
            gate.touch()
            child.expect(pexpect.EOF)
            child.close()
            assert child.exitstatus == 130
            assert "Traceback" not in (child.before or "")
    assert not server.requests and (gate.parent / "built").exists()


def test_a_set_up_failure_after_the_prompt_ends_it_with_the_message_and_exit_2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    try:  # what cog says of a model it cannot make: no API key
        make_model(load_settings(repo, SettingFlags(model="openai:gpt-4o")))
    except ConfigError as exc:
        message = exc.message
    else:
        raise AssertionError("the model was made without a key")
    with OpenAIServer([]) as server:
        env, gate = gated_env(tmp_path, server)
        del env["OPENAI_API_KEY"], env["OPENAI_BASE_URL"]
        with chat(repo, env, command=("chat", "--model", "openai:gpt-4o")) as child:
            child.expect(PROMPT)  # drawn before the model is made …
            child.send("typed meanwhile")
            child.expect("typed meanwhile")
            gate.touch()
            child.expect_exact(f"cog: {message}")  # … which ends it, said as before the prompt came first
            child.expect(pexpect.EOF)
            child.close()
            assert child.exitstatus == 2
            assert "Traceback" not in (child.before or "")
    assert not server.requests


def test_a_workspace_command_is_asked_about_before_the_prompt(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n", "cog.toml": 'mcp_servers = ["python server.py"]\n'})
    with OpenAIServer([]) as server:
        env = server_env(server, XDG_CONFIG_HOME=str(tmp_path / "config"))  # the approval is remembered there
        with chat(repo, env) as child:
            child.expect(r"wants to run this command on this machine, outside the sandbox:\s+python server\.py")
            child.expect(r"\[y/N\] ")
            assert PROMPT not in (child.before or "")  # asked first: no prompt drawn yet
            send(child, "y")
            child.expect(PROMPT)
            assert leave(child) == 0
        with chat(repo, env, command=("chat", "--model", "openai:gpt-4o-mini")) as child:  # approved: not asked again
            child.expect(PROMPT)
            assert "wants to run" not in (child.before or "")
            assert leave(child) == 0


def test_while_the_set_up_runs_the_cogcli_loggers_lines_go_above_the_prompt_and_come_back_after(capfd: pytest.CaptureFixture[str]) -> None:
    import logging
    import sys

    from cogcli.chat.set_up import said_above_prompt

    log = logging.getLogger("cogcli")
    handler = logging.StreamHandler(sys.stderr)
    log.addHandler(handler)
    try:
        with said_above_prompt():
            assert handler.stream is sys.stderr and sys.stderr is not sys.__stderr__  # prompt_toolkit's proxy
            log.warning("a warning while the set-up runs")
        assert handler.stream is sys.stderr  # the terminal's again
    finally:
        log.removeHandler(handler)
    assert "a warning while the set-up runs" in capfd.readouterr().out  # written out by the proxy, not lost
