"""`cog edit` approvals from the outside: refused off a terminal without CI, auto under CI or with
--yes, answered by another program over stdin, and asked on a real terminal (a pty)."""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import REPLAY, cog_argv, cog_env, json_lines, run_cog

FIX = "Fix the failing test"
UNFIXED = "return a - b"


def ops(repo: Path) -> str:
    return (repo / "calc" / "ops.py").read_text()


def results(events: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    return [(e["toolName"], e.get("errorCode")) for e in events if e["type"] == "tool-result"]


def test_off_a_terminal_without_ci_calls_with_side_effects_are_refused(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "--json", "--model", REPLAY, FIX], repo, ci=False, input="")

    assert out.returncode == 1, out.stderr
    events = json_lines(out.stdout)
    # the run stops at the first refusal nobody can answer: no more (paid) model turns (issue 43)
    assert results(events) == [("read_file", None), ("run_tests", "DENIED")]
    assert ops(repo).count(UNFIXED) == 2  # add and sub: nothing was edited
    assert events[-1]["type"] == "finish" and events[-1]["status"] == "denied" and events[-1]["steps"] == 2
    required = [e for e in events if e["type"] == "approval-required"]
    assert [[a["description"] for a in e["approvals"]] for e in required] == [["Run tests · all"]]
    # one notice, naming the way out
    assert out.stderr.count("cog: refused") == 1 and "--yes" in out.stderr
    refused = next(e for e in events if e["type"] == "tool-result" and e["toolName"] == "run_tests")
    assert "no one can give it" in refused["error"] and "--yes" in refused["error"]


@pytest.mark.parametrize("how", ["CI=1", "--yes"])
def test_under_ci_or_with_yes_every_call_runs_without_asking(make_repo, how: str) -> None:
    repo = make_repo("calc")
    flags, ci = (["--yes"], False) if how == "--yes" else ([], True)
    out = run_cog(["edit", "--json", *flags, "--model", REPLAY, FIX], repo, ci=ci, input="")

    assert out.returncode == 0, out.stderr
    events = json_lines(out.stdout)
    assert not [e for e in events if e["type"] == "approval-required"]
    assert "return a + b" in ops(repo)
    assert events[-1]["status"] == "completed"


def test_usage_errors_exit_2_before_the_run(make_repo) -> None:
    repo = make_repo("calc")
    both = run_cog(["edit", "--yes", "--approval", "stdin", "--model", REPLAY, FIX], repo)
    assert (both.returncode, both.stdout) == (2, "") and "--yes means --approval auto" in both.stderr
    no_tty = subprocess.run(
        [*cog_argv(), "edit", "--approval", "ask", "--model", REPLAY, FIX],
        cwd=repo, env=cog_env(), capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120,
        start_new_session=True,  # no controlling terminal: nothing to ask on
    )
    assert (no_tty.returncode, no_tty.stdout) == (2, "") and "--approval ask needs a terminal" in no_tty.stderr
    assert ops(repo).count(UNFIXED) == 2


def test_stdin_mode_lets_another_program_answer_each_approval(make_repo) -> None:
    repo = make_repo("calc")
    proc = subprocess.Popen(
        [*cog_argv(), "edit", "--json", "--approval", "stdin", "--model", REPLAY, FIX],
        cwd=repo, env=cog_env(ci=False), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("not json\n")  # skipped with a warning
    proc.stdin.write('{"type": "hello"}\n')  # another message type: ignored
    proc.stdin.flush()
    seen: list[dict[str, Any]] = []
    answered: list[str] = []
    for line in proc.stdout:
        event = json.loads(line)
        seen.append(event)
        if event["type"] == "approval-required":
            for a in event["approvals"]:
                # the run waits: the call has no result until the answer is written
                assert not any(e["type"] == "tool-result" and e["toolCallId"] == a["toolCallId"] for e in seen)
                approved = a["toolName"] != "edit_file"
                answer = {"type": "approval", "toolCallId": a["toolCallId"], "approved": approved}
                if not approved:
                    answer["reason"] = "keep ops.py as it is"
                proc.stdin.write(json.dumps(answer) + "\n")
                proc.stdin.flush()
                answered.append(a["toolName"])
    proc.stdin.close()
    err = proc.stderr.read() if proc.stderr else ""
    assert proc.wait(timeout=120) == 1, err  # the tests still fail at the end

    assert answered == ["run_tests", "edit_file", "run_tests"]
    assert results(seen) == [("read_file", None), ("run_tests", None), ("edit_file", "DENIED"), ("run_tests", None)]
    edit = next(e for e in seen if e["type"] == "tool-result" and e["toolName"] == "edit_file")
    assert "edit_file was not run: keep ops.py as it is." in edit["error"]
    assert ops(repo).count(UNFIXED) == 2
    assert "stdin line 1 is not a JSON object; skipped" in err


def test_stdin_closed_before_an_answer_refuses(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["edit", "--json", "--approval", "stdin", "--model", REPLAY, FIX], repo, input="")
    assert out.returncode == 1
    events = json_lines(out.stdout)
    assert ("edit_file", "DENIED") in results(events) and events[-1]["status"] == "denied"
    assert ops(repo).count(UNFIXED) == 2


def _controlling_terminal() -> None:  # in the child, after setsid: make stdin its terminal
    import fcntl
    import termios

    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def run_on_a_terminal(repo: Path, answers: list[tuple[str, str]], timeout: float = 180) -> tuple[int, str]:
    """Run `cog edit` with a pty as its terminal; each time the output shows ``prompt`` (counted
    from the start), press the key ``answer`` (one key answers: no Enter after it)."""
    main, child = os.openpty()
    proc = subprocess.Popen(
        [*cog_argv(), "edit", "--model", REPLAY, FIX],
        cwd=repo, env=cog_env(ci=False), stdin=child, stdout=child, stderr=child,
        start_new_session=True, preexec_fn=_controlling_terminal,
    )
    os.close(child)
    out = b""
    typed = 0
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([main], [], [], 1.0)
        if ready:
            try:
                data = os.read(main, 4096)
            except OSError:  # the child closed the terminal
                break
            if not data:
                break
            out += data
        if typed < len(answers):
            prompt, answer = answers[typed]
            shown = out.decode("utf-8", "replace").count(prompt)
            if shown >= [p for p, _ in answers[: typed + 1]].count(prompt):  # this prompt is on screen
                os.write(main, answer.encode())
                typed += 1
    os.close(main)
    return proc.wait(timeout=60), out.decode("utf-8", "replace")


TESTS_PROMPT = "Allow? [y]es, [n]o, [a]lways for run_tests in this run: "
EDIT_PROMPT = "Allow? [y]es, [n]o, [a]lways for edit_file in this run: "


@pytest.mark.parametrize(("edit_answer", "code"), [("y", 0), ("n", 1)])
def test_on_a_terminal_it_asks_y_n_or_always(make_repo, edit_answer: str, code: int) -> None:
    repo = make_repo("calc")
    exit_code, out = run_on_a_terminal(repo, [(TESTS_PROMPT, "a"), (EDIT_PROMPT, edit_answer)])

    assert exit_code == code, out
    assert "cog wants to: Run tests · all (runs code)" in out
    assert out.count(TESTS_PROMPT) == 1  # "a" covers the second test run
    assert out.count(EDIT_PROMPT) == 1
    assert "cog wants to: Edit file · calc/ops.py (writes files)" in out
    if edit_answer == "y":
        assert "return a + b" in ops(repo)
    else:
        assert ops(repo).count(UNFIXED) == 2 and "DENIED" in out


def test_ctrl_c_at_the_prompt_ends_the_run_interrupted(make_repo) -> None:
    repo = make_repo("calc")
    exit_code, out = run_on_a_terminal(repo, [(TESTS_PROMPT, "\x03")])  # the terminal turns ^C into SIGINT

    assert exit_code == 130, out
    assert out.count(TESTS_PROMPT) == 1
    assert "Aborted · 2 steps" in out
    assert ops(repo).count(UNFIXED) == 2
