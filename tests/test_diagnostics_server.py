"""tsserver kept warm for a session answers for tsc after changes (workspace_tools/diagnostics/servers.py):
the real server on the TypeScript fixture, in the real sandbox; the same verdict a tsc process gives."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import threading
from pathlib import Path
from typing import Any

import pytest

from cogcli.contract.details import DiagnosticsDetails
from cogcli.contract.invoke import invoke_tool
from conftest import init_git_repo
from runner_fixtures import FIXTURES, copy_project, need
from workspace_tools import Workspace
from workspace_tools.diagnostics.after_change import with_diagnostics
from workspace_tools.diagnostics.checker import Checker
from workspace_tools.diagnostics.tool import diagnostics_tool
from workspace_tools.files.edit import edit_file_tool
from workspace_tools.sandbox.bwrap import bwrap_executable

pytestmark = pytest.mark.anyio

BREAK = {"path": "src/math.ts", "old_text": "return a + b;", "new_text": "return `${a + b}`;"}
FIX = {"path": "src/math.ts", "old_text": "return `${a + b}`;", "new_text": "return a + b;"}


def need_sandbox() -> None:
    if bwrap_executable() is None:
        pytest.skip("NOT TESTED: bubblewrap does not work here (apt install bubblewrap; user namespaces allowed)")


def checked(root: Path, **options: Any) -> tuple[Checker, Any, Any]:
    checker = Checker(Workspace(root), **options)
    return checker, with_diagnostics(edit_file_tool(Workspace(root)), checker), diagnostics_tool(checker)


async def edit(tool: Any, args: dict[str, Any]) -> DiagnosticsDetails:
    result = await invoke_tool(tool, args)
    assert result.error is None, result.error
    return DiagnosticsDetails.model_validate(result.details["diagnostics"])


def server_pid(checker: Checker) -> int:
    [server] = checker.servers.running.values()
    assert server.alive()
    return server.pid


async def test_a_new_type_error_then_its_fix_from_one_warm_sandboxed_server(tmp_path: Path) -> None:
    need("node", "apt install nodejs")
    need_sandbox()
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    checker, edit_file, diagnostics = checked(root)
    try:
        broken = await edit(edit_file, BREAK)
        # the shape tsc's process gives (tests/test_diagnostics.py), the project's old error in src/old.ts left out
        assert [(d.file, d.line, d.column, d.rule, d.source, d.severity) for d in broken.new] == [("src/math.ts", 2, 3, "TS2322", "tsc", "error")]
        assert broken.new[0].message == "Type 'string' is not assignable to type 'number'."
        assert broken.sources == ["tsc"] and broken.sandbox == "bwrap"
        pid = server_pid(checker)
        assert Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].endswith(b"bwrap")  # started behind the sandbox
        fixed = await edit(edit_file, FIX)
        assert [(d.rule, d.line) for d in fixed.fixed] == [("TS2322", 2)] and fixed.new == []
        assert server_pid(checker) == pid  # one process for both edits
        # the whole-project check still runs tsc as a process, with the same verdict on the file
        whole = await invoke_tool(diagnostics, {"paths": ["src/old.ts"]})
        assert [(d.file, d.rule) for d in DiagnosticsDetails.model_validate(whole.details).problems] == [("src/old.ts", "TS2322")]
    finally:
        checker.close()
    assert checker.servers.running == {}
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)  # closed with its session: the group is gone


async def test_a_killed_server_is_started_again_and_still_answers(tmp_path: Path) -> None:
    need("node", "apt install nodejs")
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    checker, edit_file, _ = checked(root)
    try:
        assert [d.rule for d in (await edit(edit_file, BREAK)).new] == ["TS2322"]
        first = server_pid(checker)
        os.killpg(first, signal.SIGKILL)
        fixed = await edit(edit_file, FIX)
        assert [d.rule for d in fixed.fixed] == ["TS2322"] and fixed.new == [] and fixed.skipped == []
        assert server_pid(checker) != first
    finally:
        checker.close()


def plugin_project(tmp_path: Path, outside: Path, port: int) -> Path:
    """The fixture with its own node_modules (typescript linked in file by file) holding a tsserver
    plugin its tsconfig names: project code the server runs, which writes outside the workspace and
    connects to a port on this machine."""
    root = copy_project("ts_diagnostics", tmp_path)
    (root / "node_modules").unlink()
    modules = root / "node_modules"
    shutil.copytree(FIXTURES / "ts_diagnostics" / "node_modules" / "typescript", modules / "typescript", copy_function=os.link)
    (modules / ".bin").mkdir()
    for name in ("tsc", "tsserver"):
        (modules / ".bin" / name).symlink_to(f"../typescript/bin/{name}")
    plugin = modules / "evil-plugin"
    plugin.mkdir()
    (plugin / "package.json").write_text('{"name": "evil-plugin", "main": "index.js"}\n')
    (plugin / "index.js").write_text(f"""
const fs = require("fs"), net = require("net"), path = require("path");
const seen = path.join({str(root)!r}, "plugin-ran.txt");
try {{ fs.writeFileSync({str(outside)!r}, "written by the plugin"); fs.appendFileSync(seen, "wrote\\n"); }}
catch (e) {{ fs.appendFileSync(seen, "write refused\\n"); }}
const s = net.connect({port}, "127.0.0.1", () => {{ fs.appendFileSync(seen, "connected\\n"); s.end(); }});
s.on("error", () => fs.appendFileSync(seen, "no network\\n"));
module.exports = () => ({{ create: (info) => info.languageService }});
""")
    tsconfig = (root / "tsconfig.json").read_text()
    (root / "tsconfig.json").write_text(tsconfig.replace('"noEmit": true', '"noEmit": true,\n    "plugins": [{"name": "evil-plugin"}]'))
    return init_git_repo(root)


async def test_the_server_runs_project_code_without_network_and_writes_only_the_workspace(tmp_path: Path) -> None:
    import anyio

    need("node", "apt install nodejs")
    need_sandbox()
    listener = socket.create_server(("127.0.0.1", 0))

    def accept() -> None:
        try:
            while True:
                listener.accept()
        except OSError:  # closed at the end of the test
            pass

    threading.Thread(target=accept, daemon=True).start()
    port = listener.getsockname()[1]
    for sandbox, reached in (("off", "connected"), ("auto", "no network")):
        outside = tmp_path / f"outside-{sandbox}.txt"
        root = plugin_project(tmp_path / sandbox, outside, port)
        checker, _, _ = checked(root, sandbox=sandbox)
        try:
            # without the sandbox nothing is run after a change: the attack is shown through the server itself
            checker.servers.sandbox = sandbox  # type: ignore[assignment]
            found = await checker.servers.check(*_job(checker, root), budget=60, sandbox_only=False, rel=checker._rel_of(root))
            assert found is not None and [d.rule for d in found.problems] == []
            seen = root / "plugin-ran.txt"
            with anyio.fail_after(10):
                while len(set(seen.read_text().split("\n")) - {""} if seen.exists() else ()) < 2:
                    await anyio.sleep(0.05)
            assert reached in seen.read_text().splitlines()
            assert outside.exists() == (sandbox == "off")  # in the sandbox /tmp is its own: the write went nowhere
        finally:
            checker.close()
    listener.close()


def _job(checker: Checker, root: Path) -> tuple[Any, Any, Path, list[Path]]:
    jobs, _ = checker.jobs([root / "src" / "math.ts"], after_change=False)
    [job] = [j for j in jobs if j.source.name == "tsc"]
    return job.source, job.found, job.root, job.files


def servers_in(root: Path) -> list[int]:
    """The tsserver processes running in ``root`` (their cwd), inside the sandbox or not."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and os.readlink(proc / "cwd") == str(root) and b"tsserver" in (proc / "cmdline").read_bytes():
                found.append(int(proc.name))
        except OSError:
            continue
    return found


async def none_left(root: Path) -> bool:
    """No tsserver runs in ``root`` within 5 s (the one inside bwrap dies with bwrap, a moment later)."""
    import anyio

    for _ in range(100):
        if not servers_in(root):
            return True
        await anyio.sleep(0.05)
    return False


async def test_the_sessions_tools_close_their_server_and_turned_off_starts_none(tmp_path: Path) -> None:
    from workspace_tools import workspace_tools

    need("node", "apt install nodejs")
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    off = {t.name: t for t in workspace_tools(root, diagnostics=True, diagnostics_off=["tsc"])}
    quiet = await edit(off["edit_file"], BREAK)
    assert quiet.new == [] and [(s.source, s.why) for s in quiet.skipped] == [("tsc", "turned off (diagnostics_off)")]
    assert servers_in(root) == []
    made = workspace_tools(root, diagnostics=True)
    tools = {t.name: t for t in made}
    assert [d.rule for d in (await edit(tools["edit_file"], FIX)).fixed] == ["TS2322"]
    assert servers_in(root) != []
    closes = {id(t.close): t.close for t in made if t.close is not None}  # as Session.close_tools does
    for close in closes.values():
        close()
    assert await none_left(root)


async def test_a_server_over_its_budget_is_ended_and_the_source_skipped_with_a_note(tmp_path: Path) -> None:
    need("node", "apt install nodejs")
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    checker, edit_file, _ = checked(root, types_budget=0.05)  # no project loads in 50 ms
    try:
        found = await edit(edit_file, BREAK)
        assert found.new == [] and [(s.source, s.why) for s in found.skipped] == [("tsc", "took longer than its 0.05 s budget; call diagnostics to run it")]
        assert checker.servers.running == {} and await none_left(root)
    finally:
        checker.close()


async def test_two_edits_at_once_share_the_server_and_each_gets_its_own_verdict(tmp_path: Path) -> None:
    import anyio

    need("node", "apt install nodejs")
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    checker, edit_file, _ = checked(root)
    found: dict[str, DiagnosticsDetails] = {}

    async def one(args: dict[str, Any]) -> None:
        found[args["path"]] = await edit(edit_file, args)

    try:
        async with anyio.create_task_group() as group:
            group.start_soon(one, BREAK)
            group.start_soon(one, {"path": "src/old.ts", "old_text": '= "three";', "new_text": "= 3;"})
        assert [(d.file, d.rule) for d in found["src/math.ts"].new] == [("src/math.ts", "TS2322")]
        assert found["src/old.ts"].new == [] and [(d.file, d.rule) for d in found["src/old.ts"].fixed] == [("src/old.ts", "TS2322")]
        assert len(checker.servers.running) == 1
    finally:
        checker.close()


async def test_a_written_file_is_in_the_project_and_a_moved_one_keeps_its_problem(tmp_path: Path) -> None:
    from workspace_tools import workspace_tools

    need("node", "apt install nodejs")
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    made = workspace_tools(root, diagnostics=True)
    tools = {t.name: t for t in made}
    try:
        result = await invoke_tool(tools["write_file"], {"path": "src/fresh.ts", "content": "export const n: number = 'x';\n"})
        written = DiagnosticsDetails.model_validate(result.details["diagnostics"])
        assert [(d.file, d.line, d.rule) for d in written.new] == [("src/fresh.ts", 1, "TS2322")] and written.sources == ["tsc"]
        result = await invoke_tool(tools["move_file"], {"path": "src/fresh.ts", "new_path": "src/moved.ts"})
        moved = DiagnosticsDetails.model_validate(result.details["diagnostics"])
        assert (moved.new, moved.fixed, moved.existing, moved.files) == ([], [], 1, ["src/moved.ts"])
    finally:
        for close in {id(t.close): t.close for t in made if t.close is not None}.values():
            close()


async def test_without_the_sandbox_no_server_starts_after_a_change(tmp_path: Path) -> None:
    from workspace_tools.diagnostics.checker import NO_SANDBOX

    need("node", "apt install nodejs")
    root = init_git_repo(copy_project("ts_diagnostics", tmp_path, modules="copy"))
    checker, edit_file, _ = checked(root, sandbox="off")
    try:
        found = await edit(edit_file, BREAK)
        assert found.new == [] and [(s.source, s.why) for s in found.skipped] == [("tsc", NO_SANDBOX)]
        assert checker.servers.running == {} and servers_in(root) == []
    finally:
        checker.close()
