"""`cog chat` on a real terminal (a pty driven by pexpect) against a loopback model server: runs
with approvals in one thread, Ctrl-C stopping a run but not the chat, the slash commands, the
history kept across a restart, and plain `cog` opening the chat on a terminal only."""

from __future__ import annotations

import re
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pexpect
from cli_helpers import cog_argv, cog_env, repo_with, run_cog
from model_servers import OpenAIServer, RecordedRequest, Reply, ToolCall

from cogcli.chat.line_history import history_path
from cogcli.compaction import SUMMARY_MARK, SUMMARY_PROMPT

MODEL = "openai:gpt-4o-mini"
PROMPT = "cog>"
APPROVAL = r"Allow\? \[y\]es, \[n\]o, \[a\]lways for (\w+)"


def server_env(server: OpenAIServer, **extra: str) -> dict[str, str]:
    # no cursor-position queries: pexpect is no terminal that answers them (the status line needs one; see below)
    return cog_env({"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url, "PROMPT_TOOLKIT_NO_CPR": "1", **extra}, ci=False)


@contextmanager
def chat(repo: Path, env: dict[str, str], *args: str, command: tuple[str, ...] = ("chat", "--model", MODEL), timeout: float = 60) -> Iterator[pexpect.spawn]:
    argv = cog_argv()
    child = pexpect.spawn(argv[0], [*argv[1:], *command, *args], cwd=str(repo), env=env, encoding="utf-8", timeout=timeout, dimensions=(40, 140))
    try:
        yield child
    finally:
        if child.isalive():
            child.terminate(force=True)


def send(child: pexpect.spawn, line: str) -> None:
    child.send(line + "\r")


def answer(child: pexpect.spawn, key: str) -> None:
    """Answer the approval question on screen: one key, no Enter."""
    child.send(key)


def leave(child: pexpect.spawn) -> int:
    child.sendeof()
    child.expect(pexpect.EOF)
    child.close()
    return child.exitstatus


def user_texts(request: RecordedRequest) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "user"]


def test_instructions_run_in_one_thread_with_approvals_then_diff_undo_and_ctrl_d(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    edit = ToolCall("e1", "edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"})
    script = [Reply("x is one."), Reply("", [edit]), Reply("x is two now.")]
    with OpenAIServer(script) as server, chat(repo, server_env(server)) as child:
        child.expect("cog chat · openai:gpt-4o-mini")
        child.expect(PROMPT)
        send(child, "what is x?")
        child.expect("x is one.")
        child.expect(r"Done · 1 step")
        child.expect(PROMPT)
        send(child, "make it two")
        child.expect(APPROVAL)
        assert child.match.group(1) == "edit_file"
        answer(child, "y")
        child.expect(r"\+x = 2")  # the edit's row draws its diff, as cog edit's does
        child.expect("x is two now.")
        child.expect(r"Done · 2 steps · 1 file changed \(\+1 -1\)")
        child.expect(PROMPT)
        assert (repo / "a.py").read_text() == "x = 2\n"

        # the second instruction went to the same thread: its request holds the first one and its answer
        second = server.requests[1].body["messages"]
        assert user_texts(server.requests[1]) == ["what is x?", "make it two"]
        assert any(m["role"] == "assistant" and m["content"] == "x is one." for m in second)

        send(child, "/thread")
        child.expect(r"thread (thr_\w+)")
        thread_id = child.match.group(1)
        child.expect(r"this session: .* out, \$0\.\d+, 2 runs")  # gpt-4o-mini has a price in cogcli.settings.prices
        send(child, "/diff")
        child.expect(r"diff --git a/a.py b/a.py")
        child.expect(r"-x = 1")
        child.expect(r"\+x = 2")
        send(child, "/undo")
        child.expect(r"walked back run 2 \(make it two\) of thread thr_\w+: reverted 1 file: a.py; the next run is told")
        assert (repo / "a.py").read_text() == "x = 1\n"
        send(child, "/diff")
        child.expect("This session changed no files")
        send(child, "/frobnicate")
        child.expect(r"unknown command /frobnicate; the commands are /undo, /rewind, /allowed, /diff, /jobs, /image, /model, /compact, /thread, /new, /plan, /go, /help, /exit")
        child.expect(PROMPT)
        assert leave(child) == 0
    listed = run_cog(["thread", "list", "-C", str(repo)], repo)
    assert thread_id in listed.stdout and listed.stdout.count("thr_") == 1
    with OpenAIServer([]) as server, chat(repo, server_env(server), "--last") as child:  # the conversation goes on
        child.expect(f"continuing thread {thread_id}")
        child.expect(PROMPT)
        assert leave(child) == 0


def test_ctrl_c_stops_a_slow_test_run_and_the_chat_goes_on_in_the_thread(make_repo) -> None:
    repo = make_repo("slowtests")  # one test waits for gate.flag, which nobody makes
    script = [Reply("Running them.", [ToolCall("t1", "run_tests", {})]), Reply("Still here.")]
    with OpenAIServer(script) as server, chat(repo, server_env(server), timeout=120) as child:
        child.expect(PROMPT)
        send(child, "run the tests")
        child.expect(APPROVAL)
        answer(child, "a")
        child.expect("1/4")  # the run is in the middle of the test run (test_first passed; the next waits)
        child.sendcontrol("c")  # the terminal turns it into SIGINT: the run's abort
        child.expect("Aborted")
        child.expect("Stopped. The thread is kept")
        child.expect(PROMPT)
        send(child, "are you there?")
        child.expect("Still here.")
        child.expect(PROMPT)
        assert leave(child) == 0
    # the aborted run's call and the instruction before it are in the next request: the thread was kept
    assert user_texts(server.requests[1]) == ["run the tests", "are you there?"]
    tool = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert len(tool) == 1 and tool[0]["tool_call_id"] == "t1"
    assert not (repo / "gate.flag").exists()


def test_compact_and_model_switch_change_what_the_next_request_holds(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})

    def summary_or_answer(request: RecordedRequest) -> Reply:
        first = request.body["messages"][0]["content"]
        return Reply("SUMMARY: asked about x, answered.") if first == SUMMARY_PROMPT else Reply("second answer")

    script = [Reply("the first answer, long and detailed"), summary_or_answer, summary_or_answer]
    with OpenAIServer(script) as server, chat(repo, server_env(server)) as child:
        child.expect(PROMPT)
        send(child, "/compact")
        child.expect("nothing to compact: no run in this conversation yet")
        send(child, "tell me about x")
        child.expect(r"Done · 1 step")
        child.expect(PROMPT)
        send(child, "/compact")
        child.expect(r"Context compacted: 2 messages summarized · \d+ → \d+ tokens")
        send(child, "/thread")
        child.expect(r"context: compacted \(counted again at the next instruction\)")
        send(child, "/model bogus:thing")
        child.expect(r"unknown model provider 'bogus'")
        send(child, "/model openai:gpt-4o")
        child.expect(r"model: openai:gpt-4o from the next instruction on")
        child.expect(PROMPT)
        child.send("\x1b[200~and now?\nsecond line\x1b[201~")  # a bracketed paste of two lines: one message
        child.send("\x1b\r")  # Alt-Enter: a new line, not sent yet
        send(child, "third")
        child.expect("second answer")
        child.expect(PROMPT)
        assert leave(child) == 0
    summary_request, after = server.requests[1], server.requests[2]
    assert summary_request.body["messages"][0]["content"] == SUMMARY_PROMPT
    assert "tell me about x" in summary_request.body["messages"][1]["content"]
    # the next run's model read the summary (the user's words kept) instead of the conversation
    users = user_texts(after)
    assert users[0].startswith(SUMMARY_MARK) and "tell me about x" in users[0] and "SUMMARY: asked about x" in users[0]
    assert users[1] == "and now?\nsecond line\nthird"
    assert not any(m["role"] == "assistant" for m in after.body["messages"])
    assert after.body["model"] == "gpt-4o" and server.requests[0].body["model"] == "gpt-4o-mini"


def test_history_survives_a_restart_and_is_the_owners_only(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([]) as server:
        env = server_env(server)
        with chat(repo, env) as child:
            child.expect(PROMPT)
            send(child, "/help")
            child.expect("Commands:")
            child.expect(PROMPT)
            send(child, "/new")  # the last line typed
            child.expect("The next instruction starts a new thread.")
            child.expect(PROMPT)
            assert leave(child) == 0
        history = history_path(repo)  # in the person's state folder, not the workspace
        assert stat.S_IMODE(history.stat().st_mode) == 0o600
        assert not (repo / ".cog" / "chat-history").exists()
        with chat(repo, env) as child:
            child.expect(PROMPT)
            child.send("\x1b[A")  # up: the previous session's last line
            child.send("\x1b[A")  # and the one before
            child.send("\r")
            child.expect("Commands:")
            child.expect(PROMPT)
            # a trailing backslash goes on on the next line: one entry of two lines
            child.send("/thread \\\r")
            child.send("more\r")
            child.expect("no thread yet")
            child.expect(PROMPT)
            assert leave(child) == 0
    assert history.read_text().count("+/help") == 2 and "+/thread \n+more\n" in history.read_text()


def test_ctrl_c_clears_the_line_and_twice_on_an_empty_line_leaves(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([]) as server, chat(repo, server_env(server)) as child:
        child.expect(PROMPT)
        child.send("something half typed")
        child.sendcontrol("c")  # clears the line
        send(child, "/thread")  # what runs is only what was typed after
        child.expect("no thread yet")
        child.expect(PROMPT)
        child.sendcontrol("c")
        child.expect(re.escape("(Ctrl-C again on an empty line, or Ctrl-D, to leave)"))
        child.sendcontrol("c")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
        assert not server.requests  # nothing was sent to the model


def test_the_status_line_shows_the_model_the_context_and_the_cost(tmp_path: Path) -> None:
    """On a terminal that answers where its cursor is (every real one), a status line is drawn
    below the prompt while it waits; NO_COLOR draws it without colour."""
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([Reply("hi", usage=(1500, 20))]) as server:
        env = server_env(server, NO_COLOR="1")
        del env["PROMPT_TOOLKIT_NO_CPR"]
        with chat(repo, env) as child:
            child.expect(r"\x1b\[6n")
            child.send("\x1b[3;1R")  # the cursor is on line 3
            child.expect(r"openai:gpt-4o-mini · context: nothing sent yet · 0 in, 0 out")
            send(child, "hello")
            child.expect("Done · 1 step")
            child.expect(r"\x1b\[6n")
            child.send("\x1b[10;1R")
            child.expect(r"openai:gpt-4o-mini · context: [\d.]+k of 128k \(\d+%\) · 1.5k in, 20 out, \$0\.0\d+")
            assert "\x1b[3" not in child.before.replace("\x1b[3;1R", "")  # no colour escapes (30-37 foreground)
            assert leave(child) == 0


def test_plain_cog_opens_the_chat_on_a_terminal_and_prints_help_off_one(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([]) as server, chat(repo, server_env(server, COG_MODEL=MODEL), command=()) as child:
        child.expect("cog chat · openai:gpt-4o-mini")
        child.expect(PROMPT)
        assert leave(child) == 0
    off = run_cog([], repo)
    assert off.returncode == 2 and "Usage: cog [OPTIONS] COMMAND" in off.stdout and "chat" in off.stdout
    piped = run_cog(["chat", "--model", MODEL], repo, env={"OPENAI_API_KEY": "sk-test"})
    assert piped.returncode == 2 and "cog chat needs a terminal" in piped.stderr


def test_unknown_thread_or_no_model_exit_2_before_the_prompt(tmp_path: Path) -> None:
    repo = repo_with(tmp_path, {"a.py": "x = 1\n"})
    with OpenAIServer([]) as server:
        with chat(repo, server_env(server), "--last") as child:
            child.expect("no threads in .* yet")
            child.expect(pexpect.EOF)
            child.close()
            assert child.exitstatus == 2
        with chat(repo, server_env(server), command=("chat",)) as child:
            child.expect("no model")
            child.expect(pexpect.EOF)
            child.close()
            assert child.exitstatus == 2


def test_cog_help_does_not_import_prompt_toolkit() -> None:
    code = (
        "import sys\n"
        "from cogcli.cli import app\n"
        "try:\n"
        "    app(['--help'], prog_name='cog')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED', sorted(m for m in sys.modules if m.split('.')[0] in ('prompt_toolkit', 'pexpect') or m.startswith('cogcli.chat')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=cog_env())
    assert out.stdout.strip().splitlines()[-1] == "LOADED []", out.stderr


def test_undo_walks_back_run_by_run_rewind_and_always_for_the_session(tmp_path: Path) -> None:
    """Issue 39 as a person met it: an edit in instruction 1, another in 2; /undo twice walks both
    back (the second no longer says the last run changed nothing), the next request is told; an
    [a]lways answer holds for the rest of the chat and /allowed lists and drops it; /rewind lists
    the runs and walks back files and conversation."""
    repo = repo_with(tmp_path, {"a.py": "x = 1\n", "b.py": "y = 1\n"})
    one = ToolCall("e1", "edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"})
    two = ToolCall("e2", "edit_file", {"path": "b.py", "old_text": "y = 1", "new_text": "y = 2"})
    three = ToolCall("e3", "edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 3"})
    script = [Reply("", [one]), Reply("a done."), Reply("", [two]), Reply("b done."), Reply("tests pass."),
              Reply("", [three]), Reply("a is three."), Reply("fine.")]
    with OpenAIServer(script) as server, chat(repo, server_env(server)) as child:
        child.expect(PROMPT)
        send(child, "edit a")
        child.expect(APPROVAL)
        child.expect("in this run|for this chat session")
        assert child.match.group(0) == "for this chat session"
        answer(child, "a")
        child.expect("a done.")
        child.expect(PROMPT)
        send(child, "edit b")
        child.expect("always for edit_file for this chat session")  # not asked again
        child.expect("b done.")
        child.expect(PROMPT)
        send(child, "run the tests")
        child.expect("tests pass.")
        child.expect(PROMPT)
        send(child, "/allowed")
        child.expect(r"Allowed without asking for this chat session .*\r?\n\s+edit_file")
        send(child, "/undo")
        child.expect(r"walked back run 2 \(edit b\) .*reverted 1 file: b.py")
        send(child, "/undo")
        child.expect(r"walked back run 1 \(edit a\) .*reverted 1 file: a.py")
        assert (repo / "a.py").read_text() == "x = 1\n" and (repo / "b.py").read_text() == "y = 1\n"
        send(child, "/undo")
        child.expect("every run of thread thr_\\w+ that changed files was undone already")
        send(child, "/allowed drop edit_file")
        child.expect("edit_file asks again")
        send(child, "edit a to three")
        child.expect(APPROVAL)  # dropped: asked again
        answer(child, "y")
        child.expect("a is three.")
        child.expect(PROMPT)
        told = user_texts(server.requests[5])
        assert any(t.startswith('[cog] The person undid the run for "edit b"') and "b.py" in t for t in told)
        assert any(t.startswith('[cog] The person undid the run for "edit a"') for t in told)
        send(child, "/rewind")
        child.expect(r"1  edit a  \[files undone\]")
        child.expect(r"4  edit a to three")
        send(child, "/rewind 3")
        child.expect(r"walked back runs 4 \(edit a to three\), 3 \(run the tests\) .*reverted 1 file: a.py; the model no longer reads them")
        assert (repo / "a.py").read_text() == "x = 1\n"
        send(child, "and now?")
        child.expect("fine.")
        child.expect(PROMPT)
        last = user_texts(server.requests[-1])
        assert "run the tests" not in last and "edit a to three" not in last and last[-1] == "and now?"
        assert leave(child) == 0
