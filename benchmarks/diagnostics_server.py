"""A warm language server against a checker process per edit: on a generated TypeScript project
(``--files`` modules importing each other, TypeScript from fixtures/ts_diagnostics/node_modules),
``tsc --noEmit`` (and ``--incremental``) run after each edit, against one ``tsserver`` started once
and asked about the edited file after each edit (:mod:`workspace_tools.diagnostics.tsserver`).
Both without the sandbox (it adds the same few tens of ms to a process start, once to the server).
``--through-cog``: also ``edit_file`` with diagnostics in the sandbox, tsc as a process against the
warm server (what an edit costs in a session, the check before the edit kept from the last one).
For Python, ``pyright-langserver --stdio`` against ``pyright`` per edit only when pyright is in
this environment (it is not a dependency of cog): otherwise said and skipped.

    (cd fixtures/ts_diagnostics && npm ci)
    python benchmarks/diagnostics_server.py [--files 200] [--rounds 5] [--through-cog]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from workspace_tools.diagnostics.tsserver import TsServer

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "ts_diagnostics"


def make_project(root: Path, files: int) -> None:
    """``files`` modules of about 60 lines (typed functions and an interface, each importing the one
    before), strict tsconfig, node_modules linked from the fixture."""
    (root / "src").mkdir(parents=True)
    (root / "tsconfig.json").write_text('{"compilerOptions": {"target": "ES2020", "module": "commonjs", "strict": true, '
                                        '"noEmit": true}, "include": ["src"]}\n')
    (root / "node_modules").symlink_to(FIXTURE / "node_modules")
    for m in range(files):
        lines = [f'import {{ f{m - 1}_0, Item{m - 1} }} from "./mod{m - 1}";', ""] if m else []
        lines += [f"export interface Item{m} {{", "  id: number;", "  name: string;", "  tags: string[];", "}", ""]
        for f in range(8):
            call = f"f{m - 1}_0(x)" if m and f == 0 else "x"
            lines += [f"export function f{m}_{f}(x: number): number {{", f"  const y = {call} + {f};",
                      "  return y > 10 ? y - 1 : y * 2;", "}", ""]
        if m:
            lines += [f"export function wrap{m}(i: Item{m - 1}): Item{m} {{", "  return { ...i, tags: [...i.tags] };", "}", ""]
        (root / "src" / f"mod{m}.ts").write_text("\n".join(lines))
    subprocess.run(["git", "init", "-q", str(root)], check=True)


def tsc_once(root: Path, incremental: bool) -> tuple[float, str]:
    argv = [str(root / "node_modules" / ".bin" / "tsc"), "--noEmit", "--pretty", "false", "-p", str(root / "tsconfig.json")]
    if incremental:
        argv += ["--incremental", "--tsBuildInfoFile", str(root.parent / "build.tsbuildinfo")]
    started = time.perf_counter()
    done = subprocess.run(argv, check=False, cwd=root, capture_output=True, text=True)
    return time.perf_counter() - started, done.stdout


def edit(path: Path, broken: bool) -> None:
    text = path.read_text()
    good, bad = "  return y > 10 ? y - 1 : y * 2;", '  return y > 10 ? "many" : y * 2;'
    path.write_text(text.replace(good, bad, 1) if broken else text.replace(bad, good, 1))


async def server_rounds(root: Path, target: Path, rounds: int) -> tuple[float, list[float], int]:
    server = TsServer(["node", str(root / "node_modules" / "typescript" / "lib" / "tsserver.js")], cwd=root, env=os.environ)
    config = root / "tsconfig.json"
    try:
        started = time.perf_counter()
        await server.sync({str(target): target.read_text()}, root)
        first = await server.diagnostics([str(target)], config)
        cold = time.perf_counter() - started
        assert first[str(target)] == [], first
        times, errors = [], 0
        for i in range(rounds * 2):
            edit(target, broken=i % 2 == 0)
            started = time.perf_counter()
            await server.sync({str(target): target.read_text()}, root)
            found = await server.diagnostics([str(target)], config)
            times.append(time.perf_counter() - started)
            errors += len(found[str(target)])
        return cold, times, errors
    finally:
        server.close()


async def through_cog(root: Path, target: Path, rounds: int) -> dict[str, list[float]]:
    """``edit_file`` checked by a session's checker (sandbox auto): tsc a process, and tsserver warm."""
    from cogcli import invoke_tool
    from workspace_tools import Workspace
    from workspace_tools.diagnostics.after_change import with_diagnostics
    from workspace_tools.diagnostics.checker import Checker
    from workspace_tools.files.edit import edit_file_tool

    rel = target.relative_to(root).as_posix()
    good, bad = "  const y = x + 3;", "  const y: number = `${x + 3}`;"  # one place: edit_file needs it unique
    # a budget no check runs over under load: measured, not skipped
    kinds = {name: Checker(Workspace(root), types_budget=300) for name in ("edit_file + tsc process", "edit_file + warm tsserver")}
    kinds["edit_file + tsc process"].servers.served = frozenset()
    tools = {name: with_diagnostics(edit_file_tool(Workspace(root)), checker) for name, checker in kinds.items()}
    times: dict[str, list[float]] = {name: [] for name in kinds}
    try:
        for i in range(rounds + 1):  # the first round of each (the checks before, the server's start) left out
            for name, tool in tools.items():
                for old, new, said in ((good, bad, "new"), (bad, good, "fixed")):
                    started = time.perf_counter()
                    result = await invoke_tool(tool, {"path": rel, "old_text": old, "new_text": new})
                    took = time.perf_counter() - started
                    assert result.error is None, result.error
                    assert len(result.details["diagnostics"][said]) == 1, (name, result.details["diagnostics"])
                    if i:
                        times[name].append(took)
    finally:
        for checker in kinds.values():
            checker.close()
    return times


def pyright_note() -> str:
    venv_bin = Path(sys.prefix) / "bin"
    if not (venv_bin / "pyright-langserver").exists() and shutil.which("pyright-langserver") is None:
        return "pyright: not installed in this environment (not a dependency of cog): pyright-langserver not measured"
    return "pyright: installed, but its language server is not measured by this script yet"


def main(files: int, rounds: int, cog: bool) -> None:
    if not (FIXTURE / "node_modules" / "typescript").is_dir():
        sys.exit(f"run `npm ci` in {FIXTURE} first")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "proj"
        make_project(root, files)
        target = root / "src" / f"mod{files // 2}.ts"
        print(f"project: {files} files, {sum(len(p.read_text().splitlines()) for p in (root / 'src').glob('*.ts'))} lines; "
              f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; typescript "
              f"{subprocess.run([str(root / 'node_modules/.bin/tsc'), '-v'], check=False, capture_output=True, text=True).stdout.strip()}")
        process: dict[str, list[float]] = {"tsc --noEmit": [], "tsc --noEmit --incremental": []}
        tsc_once(root, incremental=True)  # the build info written once
        for i in range(rounds):
            edit(target, broken=i % 2 == 0)
            for name, times in process.items():
                took, _ = tsc_once(root, incremental="incremental" in name)
                times.append(took)
        edit(target, broken=False)
        cold, warm, errors = anyio.run(server_rounds, root, target, rounds)
        for name, times in process.items():
            print(f"{name:32s} per edit: median {statistics.median(times):6.2f} s  (min {min(times):.2f}, max {max(times):.2f})")
        print(f"{'tsserver, warm':32s} per edit: median {statistics.median(warm):6.2f} s  (min {min(warm):.2f}, max {max(warm):.2f}); "
              f"started and first answer {cold:.2f} s; {errors} errors over {len(warm)} edits (half broken)")
        print(f"ratio tsc / warm tsserver: {statistics.median(process['tsc --noEmit']) / statistics.median(warm):.0f}x")
        if cog:
            for name, times in anyio.run(through_cog, root, target, rounds).items():
                print(f"{name:32s} per edit: median {statistics.median(times):6.2f} s  (min {min(times):.2f}, max {max(times):.2f})")
        print(pyright_note())
        if shutil.which("typescript-language-server") is None and not (FIXTURE / "node_modules/.bin/typescript-language-server").exists():
            print("typescript-language-server: not installed (it wraps tsserver in LSP; tsserver is measured directly)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--through-cog", action="store_true")
    args = parser.parse_args()
    main(args.files, args.rounds, args.through_cog)
