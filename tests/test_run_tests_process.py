"""run_tests as a process tree: timeout and abort kill every process, output is bounded,
test_command streams lines, and the plugin loads in a venv where cogcli is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from cogcli import AbortSignal, ErrorCode
from run_tests_helpers import run_tool, wait_until_dead
from workspace_tools.host.processes import LineSplitter, OutputTail
from workspace_tools.runners.pytest_plugin import PLUGIN_DIR, PLUGIN_MODULE


def recorded_pids(root: Path) -> list[int]:
    pids = [int(p) for p in (root / "pids.txt").read_text().split()]
    assert len(pids) == 4  # pytest itself, two subprocesses, one bare fork
    return pids


@pytest.mark.anyio
async def test_timeout_kills_the_whole_tree(make_repo) -> None:
    root = make_repo("hang")
    run = await run_tool(root, timeout=12)

    assert run.result.error_code == ErrorCode.TOOL_TIMEOUT
    assert "timed out after 12 s" in (run.result.error or "")
    assert [u.content for u in run.updates][:1] == ["tests/test_hang.py::test_quick passed"]
    pids = recorded_pids(root)
    # the kill ran before the call returned: even the SIGTERM-ignoring children are gone
    assert wait_until_dead(pids, within=5.0) == []


@pytest.mark.anyio
async def test_abort_kills_the_whole_tree(make_repo) -> None:
    root = make_repo("hang")
    signal = AbortSignal()

    async def abort_when_children_run() -> None:
        while not (root / "pids.txt").exists():
            await anyio.sleep(0.05)
        signal.abort("user pressed Ctrl-C")

    async with anyio.create_task_group() as tg:
        tg.start_soon(abort_when_children_run)
        run = await run_tool(root, signal=signal)

    assert run.result.error_code == ErrorCode.ABORTED
    assert wait_until_dead(recorded_pids(root), within=5.0) == []
    # the counts reached before the abort are kept
    (report,) = (root / ".cog" / "test-reports").glob("run-*.json")
    kept = json.loads(report.read_text())
    assert (kept["partial"], kept["passed"], [t["id"] for t in kept["tests"]]) == (True, 1, ["tests/test_hang.py::test_quick"])


@pytest.mark.anyio
async def test_output_flood_keeps_a_bounded_tail(make_repo) -> None:
    run = await run_tool(make_repo("flood"))

    assert run.result.ok, run.result.error
    assert run.outcomes() == {"tests/test_flood.py::test_prints_a_flood": "passed"}
    d = run.details
    assert d["output_dropped_bytes"] > 19_000_000
    assert len(d["output_tail"].encode()) < 70 * 1024
    assert d["output_tail"].startswith(f"…[{d['output_dropped_bytes']} earlier bytes dropped]")
    assert "1 passed" in d["output_tail"]  # the end is kept
    assert len(run.result.result) < 2000


@pytest.mark.anyio
async def test_test_command_streams_each_line_while_it_runs(make_repo) -> None:
    root = make_repo("calc")
    command = (
        "echo one; i=0; while [ ! -f gate.flag ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; "
        "[ -f gate.flag ] && echo two-after-gate; echo to-stderr >&2; exit 3"
    )
    lines: list[str] = []

    def on_update(update) -> None:
        lines.append(update.content)
        (root / "gate.flag").touch()

    run = await run_tool(root, {"paths": ["tests"]}, on_update=on_update, test_command=command)

    assert run.result.ok, run.result.error  # a failing command is reported, not a tool error
    assert lines == ["one", "two-after-gate", "to-stderr"]
    assert [u.details["line"] for u in run.updates] == [1, 2, 3]
    assert run.updates[0].presentation is not None and run.updates[0].presentation.label == "Run tests"
    assert run.details["exit_code"] == 3
    assert run.details["command"] == command + " tests"
    assert "failed (exit 3)" in run.result.result
    assert "two-after-gate" in run.result.result


@pytest.mark.anyio
async def test_test_command_bounds_a_line_without_newlines(make_repo) -> None:
    command = f"{sys.executable} -c \"import sys; sys.stdout.write('y' * 5_000_000)\"; echo; echo done"
    run = await run_tool(make_repo("calc"), on_update=None, test_command=command)

    assert run.result.ok, run.result.error
    contents = [u.content for u in run.updates]
    assert contents == ["y" * 8192, "done"]
    assert run.details["exit_code"] == 0
    assert run.details["output_dropped_bytes"] > 4_000_000
    assert "passed (exit 0)" in run.result.result


@pytest.mark.anyio
async def test_test_command_refuses_keyword(make_repo) -> None:
    run = await run_tool(make_repo("calc"), {"keyword": "add"}, test_command="true")
    assert run.result.error_code == ErrorCode.INVALID_ARGUMENTS
    assert "keyword works only with a runner cog knows" in (run.result.error or "")


def make_venv(root: Path, *, with_pytest: bool) -> Path:
    """A real venv in the workspace, without cogcli; with pytest reachable through a .pth line."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root / ".venv")], check=True)
    if with_pytest:
        site = subprocess.run(
            [str(root / ".venv/bin/python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
        # pytest's own directory holds cogcli's editable finder too, but a .pth-added directory's
        # own .pth files are not run: cogcli stays unimportable
        Path(site, "deps.pth").write_text(str(Path(pytest.__file__).parents[1]) + "\n")
    return root / ".venv/bin/python"


@pytest.mark.anyio
async def test_plugin_runs_in_the_workspace_venv_without_cogcli(make_repo) -> None:
    root = make_repo("calc")
    python = make_venv(root, with_pytest=True)
    check = subprocess.run(
        [str(python), "-c", "import pytest\ntry:\n import cogcli\nexcept ImportError: print('no cogcli')"],
        cwd=root, capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert check.stdout.strip() == "no cogcli", check.stderr

    run = await run_tool(root)

    assert run.result.ok, run.result.error
    assert run.details["command"].startswith(f"{python} -m pytest")
    assert [u.content for u in run.updates] == [
        "tests/test_ops.py::test_add failed",
        "tests/test_ops.py::test_sub passed",
        "tests/test_ops.py::test_mul passed",
    ]


@pytest.mark.anyio
async def test_a_workspace_venv_without_pytest_is_a_clear_tool_error(make_repo) -> None:
    root = make_repo("calc")
    make_venv(root, with_pytest=False)
    run = await run_tool(root)

    assert run.result.error_code == ErrorCode.TOOL_ERROR
    error = run.result.error or ""
    assert error.startswith(f"pytest is not installed for {root}/.venv/bin/python: install it")
    assert "No module named pytest" in error


def test_plugin_imports_only_stdlib_and_pytest() -> None:
    """Importing the plugin pulls in no cogcli or workspace_tools module, and works with only
    its own directory (plus pytest) importable."""
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        f"import {PLUGIN_MODULE}\n"
        "new = sorted(m for m in set(sys.modules) - before if m.split('.')[0] in ('cogcli', 'workspace_tools'))\n"
        "print(new)\n"
    )
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(PLUGIN_DIR)}
    out = subprocess.run(
        [sys.executable, "-S", "-c", f"import sys; sys.path.append({str(Path(pytest.__file__).parents[1])!r})\n" + code],
        env=env, cwd="/", capture_output=True, text=True, check=True,
    )
    assert out.stdout.strip() == "[]"


def test_output_tail_keeps_the_end_and_counts_the_rest() -> None:
    tail = OutputTail(limit=10)
    tail.feed(b"0123456789")
    tail.feed(b"abcde")
    assert tail.dropped == 5
    assert tail.text() == "…[5 earlier bytes dropped]\n56789abcde"


def test_line_splitter_cuts_long_lines_and_keeps_order() -> None:
    s = LineSplitter(max_line=4)
    assert s.feed(b"ab\ncdefgh") == [b"ab", b"cdef"]
    assert s.feed(b"ijk\nxy") == []  # the rest of the long line is dropped up to its newline
    assert s.feed(b"z\n") == [b"xyz"]
    assert s.feed(b"tail") == [b"tail"]  # reached max_line: emitted, rest dropped
    assert s.feed(b"more\nla") == []
    assert s.flush() == [b"la"]


@pytest.mark.anyio
async def test_a_key_block_printed_by_a_test_streams_no_line_of_its_body(make_repo) -> None:
    """Output streams a line an update, and only the BEGIN line says PRIVATE KEY: the block is
    followed across lines, so no update (and no MCP progress message) carries its body."""
    repo = make_repo("calc")
    body = ["Version: GnuPG v2", "", *[("QUJD" * 16)[: 64 - i] for i in range(6)], "=ab12"]
    (repo / "key.txt").write_text("\n".join(["-----BEGIN PGP PRIVATE KEY BLOCK-----", *body, "-----END PGP PRIVATE KEY BLOCK-----", "after"]) + "\n")
    run = await run_tool(repo, on_update=None, test_command="cat key.txt")
    streamed = [u.content for u in run.updates]
    assert streamed[-1] == "after" and streamed[0] == "[REDACTED]"
    assert not any(line in streamed for line in body if line), streamed
