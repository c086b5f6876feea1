"""`cog tool` and `cog tools`: one workspace tool through invoke_tool(), drawn like a call in a run."""

from __future__ import annotations

import json

from cli_helpers import cog_python, json_lines, read_pty, run_cog

from pydantic import BaseModel

from cogcli.wire.events import parse_event
from workspace_tools.sandbox.interpreter import ProjectPython


def test_read_file_draws_its_row_and_exits_0(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["tool", "read_file", "path=calc/ops.py", "limit=2"], repo)
    assert (out.returncode, out.stderr) == (0, "")
    # a tool run by hand shows what the model would read under its row
    assert out.stdout.splitlines() == [
        "Read file  calc/ops.py:1-2",
        "         1\tdef add(a: int, b: int) -> int:",
        '         2\t    """Return the sum of a and b."""',
        "    [showing lines 1-2 of 13; read on with offset=3]",
    ]


def test_json_output_is_the_call_s_events(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["tool", "read_file", "path=calc/ops.py", "limit=2", "--json"], repo)  # limit=2 is the number 2
    assert out.returncode == 0, out.stderr
    events = json_lines(out.stdout)
    assert [e["type"] for e in events] == ["tool-call-start", "tool-call-end", "tool-result"]
    assert [e["seq"] for e in events] == [0, 1, 2]
    for line in out.stdout.splitlines():
        parse_event(line)
    assert events[1]["arguments"] == {"path": "calc/ops.py", "limit": 2}
    shown = [line for line in events[2]["result"].splitlines() if "\t" in line]
    assert [line.split("\t", 1)[1] for line in shown] == ["def add(a: int, b: int) -> int:", '    """Return the sum of a and b."""']
    assert events[2]["presentation"]["label"] == "Read file"


def test_edit_file_shows_the_diff_and_changes_the_file(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["tool", "edit_file", "path=calc/ops.py", "old_text=    return a - b\n\n\ndef sub", "new_text=    return a + b\n\n\ndef sub"], repo)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "Edit file  calc/ops.py"
    assert "    -    return a - b" in lines and "    +    return a + b" in lines
    assert "return a + b" in (repo / "calc" / "ops.py").read_text()


def test_string_parameters_keep_text_that_looks_like_json(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["tool", "write_file", "path=data.txt", "content=123", "--json"], repo)
    assert out.returncode == 0, out.stderr
    assert (repo / "data.txt").read_text() == "123"
    via_args = run_cog(["tool", "write_file", "--args", json.dumps({"path": "b.txt", "content": "x"}), "content=y"], repo)
    assert via_args.returncode == 0 and (repo / "b.txt").read_text() == "y"  # key=value wins over --args


def test_run_tests_streams_updates_and_exits_1_while_tests_fail(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["tool", "run_tests"], repo)
    assert out.returncode == 1
    assert out.stdout.splitlines() == [
        "  … Run tests  tests/test_ops.py::test_add failed",
        "  … Run tests  tests/test_ops.py::test_sub passed",
        "  … Run tests  tests/test_ops.py::test_mul passed",
        "Run tests  all · 1 failed, 2 passed",
        "    " + ProjectPython(cog_python(), "cog").fallback_note(),  # no env of its own: cog's Python ran them
        "    FAILED tests/test_ops.py::test_add at tests/test_ops.py:5 — assert -1 == 5",
    ]
    passing = run_cog(["tool", "run_tests", "keyword=test_sub or test_mul"], repo)
    assert passing.returncode == 0, passing.stdout


def test_failed_calls_exit_1_and_usage_errors_exit_2(make_repo) -> None:
    repo = make_repo("calc")
    outside = run_cog(["tool", "read_file", "path=../secret"], repo)
    assert outside.returncode == 1
    assert outside.stdout.startswith("✗ Read file  ../secret — PATH_OUTSIDE_WORKSPACE: ")
    unknown = run_cog(["tool", "nope"], repo)
    assert unknown.returncode == 2
    assert unknown.stdout.startswith("✗ nope — TOOL_NOT_FOUND: unknown tool 'nope'; available tools: ")
    missing = run_cog(["tool", "read_file"], repo)
    assert missing.returncode == 2
    assert missing.stdout == "✗ read_file — INVALID_ARGUMENTS: invalid arguments for read_file:\n    - path: Field required\n"
    for bad, needle in (
        (["tool", "read_file", "path"], "expected key=value, got 'path'"),
        (["tool", "read_file", "--args", "{nope"], "--args is not valid JSON"),
        (["tool", "read_file", "--args", "[1]"], "--args must be a JSON object"),
    ):
        out = run_cog(bad, repo)
        assert (out.returncode, out.stdout) == (2, "") and needle in out.stderr


def test_tools_lists_names_parameters_and_schemas(make_repo) -> None:
    repo = make_repo("calc")
    out = run_cog(["tools"], repo)
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    assert "read_file(path, offset?, limit?)" in lines
    assert "edit_file(path, old_text?, new_text?, replace_all?, edits?)" in lines  # one of the two forms
    assert lines[lines.index("read_file(path, offset?, limit?)") + 1].startswith("    Read a text file")
    specs = json.loads(run_cog(["tools", "--json"], repo).stdout)
    by_name = {s["name"]: s for s in specs}
    assert {"read_file", "edit_file", "write_file", "run_tests"} <= set(by_name)
    assert by_name["read_file"]["parameters"]["required"] == ["path"]
    assert by_name["edit_file"]["description"]


def _on_a_pty(argv: list[str], cwd, env: dict[str, str]) -> tuple[int, str]:
    import os
    import pty
    import subprocess

    from cli_helpers import cog_argv, cog_env

    main, child = pty.openpty()
    proc = subprocess.Popen([*cog_argv(), *argv], cwd=cwd, env=cog_env(env), stdout=child, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    os.close(child)
    out = read_pty(main)
    os.close(main)
    return proc.wait(timeout=120), out.decode("utf-8")


def test_on_a_terminal_progress_is_drawn_in_place_with_colour_unless_no_color(make_repo) -> None:
    repo = make_repo("calc")
    code, out = _on_a_pty(["tool", "run_tests"], repo, {"COLUMNS": "120"})  # room for the test id on the live line
    assert code == 1
    assert "\r\x1b[2K" in out  # the running row is erased and redrawn, not printed line after line
    # a test run's live line counts, with a bar, and names the test that just ended
    assert "\x1b[2m  … Run tests · 1/3 · 1 failed · 0 passed  █████░░░░░░░░░░░ · tests/test_ops.py::test_add failed\x1b[0m" in out
    row, _, rest = out.rpartition("\x1b[1mRun tests\x1b[0m  all · 1 failed, 2 passed\r\n")
    # under the row: which Python ran them (bold, wrapped to the terminal), then the failure
    assert row and rest.startswith("    \x1b[1mNo project environment found") and "not the project's" in rest
    assert rest.endswith("\r\n    \x1b[31mFAILED tests/test_ops.py::test_add at tests/test_ops.py:5 — assert -1 == 5\x1b[0m\r\n")
    code, plain = _on_a_pty(["tool", "run_tests"], repo, {"NO_COLOR": "1"})
    assert code == 1 and "\x1b" not in plain
    assert "\rRun tests  all · 1 failed, 2 passed\r\n    No project environment found" in plain
    assert plain.endswith("\r\n    FAILED tests/test_ops.py::test_add at tests/test_ops.py:5 — assert -1 == 5\r\n")


def test_timeout_stops_a_call_that_takes_too_long(make_repo) -> None:
    repo = make_repo("calc", git=False)
    (repo / "tests" / "test_slow.py").write_text("import time\n\n\ndef test_slow():\n    time.sleep(120)\n")
    out = run_cog(["tool", "-C", ".", "run_tests", "--timeout", "5"], repo)
    assert out.returncode == 1
    row = next(line for line in out.stdout.splitlines() if line.startswith("✗ Run tests"))
    assert "TOOL_TIMEOUT" in row


def test_args_nested_too_deeply_is_a_usage_error_not_a_traceback(make_repo) -> None:
    repo = make_repo("calc")
    deep = '{"path": ' + "[" * 5000 + "]" * 5000 + "}"
    out = run_cog(["tool", "read_file", "--args", deep], repo)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "nested too deeply" in out.stderr


def test_a_file_changed_by_hand_is_not_for_cog_undo_and_cog_tool_says_so(make_repo) -> None:
    """The tools' descriptions promise `cog undo` (true in a run); a direct call records no run."""
    repo = make_repo("calc")
    (repo / "notes.txt").write_text("mine, untracked\n")
    out = run_cog(["tool", "delete_file", "path=notes.txt"], repo)
    assert out.returncode == 0 and not (repo / "notes.txt").exists()
    assert "cog undo does not put back what cog tool changes" in out.stderr, out.stderr
    assert run_cog(["undo"], repo).returncode == 2  # indeed: nothing to undo
    assert run_cog(["tool", "read_file", "path=calc/ops.py"], repo).stderr == ""  # reading says nothing


def test_cog_tool_says_a_command_s_changes_are_not_for_undo_and_a_background_job_ends_with_it(make_repo) -> None:
    # Found trying it by hand: the result said "read its output with command_output(id='job_1')",
    # which a later `cog tool` cannot do, and run_command's changes got no undo note (docs/undo.md says they do).
    repo = make_repo("calc")
    out = run_cog(["tool", "run_command", "command=echo x > made.txt"], repo)
    assert out.returncode == 0 and (repo / "made.txt").exists()
    assert "cog undo does not put back what cog tool changes" in out.stderr, out.stderr
    started = run_cog(["tool", "run_command", "command=sleep 30", "background=true"], repo)
    assert started.returncode == 0 and "job_1 ended with this cog tool call" in started.stderr, started.stderr
    assert "cog undo does not put back" not in started.stderr
    later = run_cog(["tool", "command_output", "id=job_1"], repo)
    assert later.returncode == 2 and "no background command 'job_1'" in later.stdout + later.stderr


def test_a_direct_call_runs_with_what_start_up_made_frozen(make_repo) -> None:
    """`cog tool` (issue 53): the collector walks only what the call makes, not every object start-up
    made (passes over them were ~15-20 ms of a one-off call); the call is still validated, run and
    drawn, and nothing stays frozen or paused for a caller in the same process."""
    import gc
    import io

    from cogcli import tool
    from cogcli.commands.tool import call_tool
    from cogcli.render import make_renderer
    from cogcli.session import Session
    from cogcli.settings.load import load_settings

    frozen_during: list[int] = []
    collecting_during: list[bool] = []

    @tool(name="probe", description="says how many objects the collector leaves alone")
    def probe(params: _Probe) -> str:
        frozen_during.append(gc.get_freeze_count())
        collecting_during.append(gc.isenabled())
        return f"n={params.n}"

    gc.unfreeze()
    gc.enable()  # as the command line leaves it just before the call
    session = Session(load_settings(make_repo("calc")), make_tools=lambda settings, **options: [probe])
    out = io.BytesIO()
    assert call_tool(session, "probe", {"n": 3}, make_renderer("jsonl", out)) == 0
    assert frozen_during and frozen_during[0] > 10_000  # the modules, models and settings made before the call
    assert collecting_during == [True]  # the collector is on for what the call makes
    assert gc.get_freeze_count() == 0 and gc.isenabled()
    assert [json.loads(line)["type"] for line in out.getvalue().decode().splitlines()] == ["tool-call-start", "tool-call-end", "tool-result"]
    assert json.loads(out.getvalue().decode().splitlines()[-1])["result"] == "n=3"

    # a call the tool's own parameters refuse ends as it did: validated by the real tool, exit 2
    out = io.BytesIO()
    assert call_tool(session, "probe", {"n": "many"}, make_renderer("jsonl", out)) == 2
    assert len(frozen_during) == 1 and gc.get_freeze_count() == 0

    # a caller that froze objects of its own finds them still frozen after the call
    gc.freeze()
    try:
        assert gc.get_freeze_count() > 0
        assert call_tool(session, "probe", {"n": 4}, make_renderer("jsonl", io.BytesIO())) == 0
        assert gc.get_freeze_count() > 0  # not thawed (objects freed since may have left the count)
    finally:
        gc.unfreeze()


class _Probe(BaseModel):
    n: int
