"""`cog edit` asking on a real terminal (a pty, through pexpect): the question shows the diff (or
the command) before it asks, one key answers it (no Enter), Enter alone denies, and once answered
the question is erased down to one line. What the person finally sees is checked on a small model
of the screen that plays the escape sequences cog writes."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pexpect
import pytest
from cli_helpers import REPLAY, cog_argv, cog_env

from cogcli.commands.approve import answer_of, fit, question_body
from cogcli.wire.events import Approval

FIX = "Fix the failing test"
TESTS_PROMPT = b"Allow? [y]es, [n]o, [a]lways for run_tests in this run: "
EDIT_PROMPT = b"Allow? [y]es, [n]o, [a]lways for edit_file in this run: "


class Screen:
    """Just enough of a terminal to replay what cog writes: text, CR, LF, cursor up (``ESC [ n A``),
    erase below (``ESC [ J``), erase line (``ESC [ 2K``, ``ESC [ K``); colours and other sequences
    change nothing shown. Lines never scroll away (the tests stay well within the screen)."""

    def __init__(self) -> None:
        self.lines: list[str] = [""]
        self.row = 0
        self.col = 0

    def feed(self, data: str) -> None:
        for token in re.findall(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b.|[\s\S]", data):
            if token.startswith("\x1b["):
                n = int(token[2:-1] or 1) if token[2:-1].isdigit() else 1
                kind = token[-1]
                if kind == "A":
                    self.row = max(0, self.row - n)
                elif kind == "J":
                    self.lines[self.row] = self.lines[self.row][: self.col]
                    del self.lines[self.row + 1 :]
                elif kind == "K":
                    line = self.lines[self.row]
                    self.lines[self.row] = "" if token[2:-1] == "2" else line[: self.col]
            elif token == "\r":
                self.col = 0
            elif token == "\n":
                self.row += 1
                if self.row == len(self.lines):
                    self.lines.append("")
            elif not token.startswith("\x1b"):
                line = self.lines[self.row].ljust(self.col)
                self.lines[self.row] = line[: self.col] + token + line[self.col + 1 :]
                self.col += 1

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.lines)


def spawn(repo: Path, *, no_color: bool = False) -> tuple[pexpect.spawn, io.BytesIO]:
    argv = cog_argv()
    env = cog_env({"NO_COLOR": "1"} if no_color else {"TERM": "xterm"}, ci=False)
    child = pexpect.spawn(argv[0], [*argv[1:], "edit", "--model", REPLAY, FIX], cwd=str(repo), env=env, dimensions=(40, 120), timeout=120)
    seen = io.BytesIO()
    child.logfile_read = seen
    return child, seen


def finish(child: pexpect.spawn, seen: io.BytesIO) -> tuple[int, str, Screen]:
    child.expect(pexpect.EOF)
    child.close()
    out = seen.getvalue().decode("utf-8", "replace")
    screen = Screen()
    screen.feed(out)
    return child.exitstatus if child.exitstatus is not None else 128 + (child.signalstatus or 0), out, screen


def ops(repo: Path) -> str:
    return (repo / "calc" / "ops.py").read_text()


def test_one_key_answers_the_diff_comes_first_and_one_line_stays_per_question(make_repo) -> None:
    repo = make_repo("calc")
    child, seen = spawn(repo)
    child.expect_exact(TESTS_PROMPT)
    child.send("y")  # one key, no Enter
    child.expect_exact(EDIT_PROMPT)
    asked = seen.getvalue().decode()
    child.send("y")
    child.expect_exact(TESTS_PROMPT)
    child.send("\r")  # Enter alone: no
    code, out, screen = finish(child, seen)

    assert code == 1, out  # the last test run was refused
    assert "return a + b" in ops(repo)
    # the edit's diff, coloured, before the question about it; the test run's command before its own
    question = asked[asked.rindex("cog wants to: Edit file · calc/ops.py") :]
    assert question.index("\x1b[32m  │ +    return a + b") < question.index(EDIT_PROMPT.decode())
    assert "\x1b[31m  │ -    return a - b" in question and "calc/ops.py  +1 −1" in question
    assert re.search(r"  \$ \S*python\S* -m pytest", asked)
    # what stays on the screen: one line per question, in order
    shown = screen.text()
    assert "cog wants to:" not in shown and "Allow?" not in shown and "│" not in shown, shown
    assert "needs approval" not in shown  # the question took the place of the renderer's line
    assert re.findall(r"^[✓✗] (?:approved|denied) .*$", shown, re.M) == [
        "✓ approved Run tests · all",
        "✓ approved Edit file · calc/ops.py",
        "✗ denied Run tests · all",
    ]


def test_n_denies_other_keys_are_ignored_and_a_covers_the_rest_of_the_run(make_repo) -> None:
    repo = make_repo("calc")
    child, seen = spawn(repo, no_color=True)
    child.expect_exact(TESTS_PROMPT)
    child.send("x")  # not an answer: nothing happens
    child.send("\x1b[A")  # an arrow key holds an "A": not "always"
    with pytest.raises(pexpect.TIMEOUT):
        child.expect_exact("approved", timeout=1.5)
    child.send("a")
    child.expect_exact(EDIT_PROMPT)
    child.send("n")
    code, out, screen = finish(child, seen)

    assert code == 1, out
    assert ops(repo).count("return a - b") == 2  # the edit was refused: nothing written
    assert "\x1b[3" not in out  # NO_COLOR: no colour at all
    assert "  │ +    return a + b" in out  # the diff is still shown, uncoloured
    assert out.count(TESTS_PROMPT.decode()) == 1  # "a": the second test run was not asked about
    assert re.findall(r"^[✓✗] (?:approved|denied) .*$", screen.text(), re.M) == [
        "✓ approved Run tests · all (always for run_tests in this run)",
        "✗ denied Edit file · calc/ops.py",
        "✓ approved Run tests · all (always for run_tests in this run)",
    ]


def test_ctrl_c_at_the_question_ends_the_run_and_gives_the_terminal_back_as_it_was(make_repo) -> None:
    import termios
    import time

    repo = make_repo("calc")
    child, seen = spawn(repo)
    child.expect_exact(TESTS_PROMPT)
    time.sleep(0.3)  # the question is shown once the terminal is in cbreak mode; give the read a moment
    lflag = termios.tcgetattr(child.child_fd)[3]  # a pty's two ends share one set of modes
    assert not lflag & (termios.ICANON | termios.ECHO)  # one key answers, and it is not echoed
    child.send("\x03")
    child.expect_exact("Aborted · 2 steps".encode())
    lflag = termios.tcgetattr(child.child_fd)[3]
    assert lflag & termios.ICANON and lflag & termios.ECHO  # put back, though the wait was cut short
    code, out, _ = finish(child, seen)
    assert code == 130, out
    assert ops(repo).count("return a - b") == 2


def test_keys_and_the_question_body() -> None:
    keys = (b"y", b"Y", b"n", b"a", b"\r", b"\n", b"y\n", b"x", b"yes\n", b"\x1b[A", b"ny", b"")
    assert [answer_of(k) for k in keys] == ["y", "y", "n", "a", "n", "n", "y", None, None, None, None, None]
    diff = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n" + "".join(f"-x{i}\n+y{i}\n" for i in range(30))
    approval = Approval(tool_call_id="c", tool_name="edit_file", description="Edit file · a.py",
                        preview={"path": "a.py", "diff": diff + "--- not a header\n", "added": 30, "removed": 30})
    body = question_body(approval, max_lines=10)
    assert body[0] == "  a.py  +30 −30" and body[1] == "  │ @@ -1,3 +1,3 @@"
    assert len(body) == 10 and body[-1] == "  … 54 more lines of the diff not shown: press v to view all"
    assert len(question_body(approval, max_lines=None)) == 63 and answer_of(b"v", view=True) == "v" and answer_of(b"v") is None
    # a control character in the diff is shown escaped, never played
    evil = Approval(tool_call_id="c", tool_name="edit_file", description="Edit",
                    preview={"path": "a", "diff": "@@ -1 +1 @@\n-a\n+\x1b]52;c;aGk=\x07b\tc\n", "added": 1, "removed": 1})
    assert question_body(evil, max_lines=10)[-1] == "  │ +\\x1b]52;c;aGk=\\x07b    c"
    assert question_body(Approval(tool_call_id="c", tool_name="run_tests", description="Run", preview={"command": "make\x1b[2J test"}), max_lines=5) == [
        "  $ make\\x1b[2J test"
    ]
    empty = Approval(tool_call_id="c", tool_name="write_file", description="Write file · e.py",
                     preview={"path": "e.py", "diff": "diff --git a/e.py b/e.py\nnew file mode 100644\n", "added": 0, "removed": 0})
    assert question_body(empty, max_lines=5) == ["  e.py  +0 −0", "  │ new file mode 100644"]
    same = Approval(tool_call_id="c", tool_name="write_file", description="Write file · e.py", preview={"path": "e.py", "diff": "", "added": 0, "removed": 0})
    assert question_body(same, max_lines=5) == ["  (no change: the file already holds exactly this)"]
    assert fit("abcdef", 4) == "abc…" and fit("日本語です", 5) == "日本…" and fit("abc", 3) == "abc"


def test_json_lines_with_stdin_answers_carry_the_preview(make_repo) -> None:
    from cli_helpers import json_lines, run_cog

    repo = make_repo("calc")
    answers = [{"type": "approval", "toolCallId": cid, "approved": cid == "call_3"} for cid in ("call_2", "call_3", "call_4")]
    out = run_cog(["edit", "--json", "--approval", "stdin", "--model", REPLAY, FIX], repo, ci=False,
                  input="".join(json.dumps(a) + "\n" for a in answers))

    events = json_lines(out.stdout)
    previews = {a["toolName"]: a.get("preview") for e in events if e["type"] == "approval-required" for a in e["approvals"]}
    edit = previews["edit_file"]
    assert (edit["path"], edit["added"], edit["removed"]) == ("calc/ops.py", 1, 1)
    assert "-    return a - b\n+    return a + b\n" in edit["diff"]
    assert re.search(r"-m pytest", previews["run_tests"]["command"])
    result = next(e for e in events if e["type"] == "tool-result" and e["toolName"] == "edit_file")
    assert result["details"]["diff"] == edit["diff"] and "return a + b" in ops(repo)
