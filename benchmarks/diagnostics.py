"""What diagnostics add to an edit: ``edit_file`` (through ``invoke_tool``) on a generated mid-size
Python project, without diagnostics, with ruff alone, and with ruff and mypy, in alternating rounds;
the median time of an edit and what each adds (target: ruff ≤ +0.5 s; the type checker reported
apart). The first edit of a file checks it before the change too (nothing kept yet): reported apart.

    python benchmarks/diagnostics.py [--rounds 7] [--modules 200] [--sandbox auto]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from cogcli import invoke_tool
from workspace_tools import workspace_tools


def make_project(root: Path, modules: int) -> None:
    """``modules`` modules of about 100 lines each (functions with annotations calling each other),
    configured for mypy, with a small lint backlog (an unused import in every tenth module)."""
    (root / "pyproject.toml").write_text('[project]\nname = "mid"\nversion = "0"\n\n[tool.mypy]\ncheck_untyped_defs = true\n')
    package = root / "mid"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for m in range(modules):
        lines = ["from __future__ import annotations", ""]
        if m % 10 == 0:
            lines += ["import os", ""]
        if m:
            lines += [f"from mid.mod{m - 1} import f{m - 1}_0", ""]
        for f in range(12):
            call = f"f{m - 1}_0(x)" if m and f == 0 else "x"
            lines += ["", f"def f{m}_{f}(x: int) -> int:", f'    """Function {f} of module {m}."""',
                      f"    y = {call} + {f}", "    if y > 10:", "        return y - 1", "    return y * 2", ""]
        (package / f"mod{m}.py").write_text("\n".join(lines) + "\n")
    subprocess.run(["git", "init", "-q", str(root)], check=True)


async def one_edit(tools: dict[str, Any], path: str, old: str, new: str) -> float:
    started = time.perf_counter()
    result = await invoke_tool(tools["edit_file"], {"path": path, "old_text": old, "new_text": new})
    took = time.perf_counter() - started
    assert result.error is None, result.error
    return took


async def main(rounds: int, modules: int, sandbox: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "mid"
        root.mkdir()
        make_project(root, modules)
        target = f"mid/mod{modules // 2}.py"
        old, new = "    y = x + 5\n", "    y = x + 55\n"
        kinds = {
            "none": {t.name: t for t in workspace_tools(root, sandbox=sandbox)},  # type: ignore[arg-type]
            "ruff": {t.name: t for t in workspace_tools(root, sandbox=sandbox, diagnostics=True, diagnostics_off=["mypy"])},  # type: ignore[arg-type]
            "ruff+mypy": {t.name: t for t in workspace_tools(root, sandbox=sandbox, diagnostics=True)},  # type: ignore[arg-type]
        }
        first = {}
        for name in ("ruff", "ruff+mypy"):  # the first edit checks the file before the change too
            first[name] = await one_edit(kinds[name], target, old, new)
            await one_edit(kinds[name], target, new, old)
        times: dict[str, list[float]] = {name: [] for name in kinds}
        for _ in range(rounds):
            for name, tools in kinds.items():
                took = await one_edit(tools, target, old, new)
                took += await one_edit(tools, target, new, old)
                times[name].append(took / 2)
        median = {name: statistics.median(ts) for name, ts in times.items()}
        lines = sum(len(p.read_text().splitlines()) for p in (root / "mid").glob("*.py"))
        print(f"project: {modules} modules, {lines} lines; sandbox {sandbox}; {rounds} rounds of two edits each")
        for name in kinds:
            added = median[name] - median["none"]
            print(f"  {name:<10} median edit {median[name] * 1000:7.1f} ms" + (f"  (+{added * 1000:.1f} ms)" if name != "none" else ""))
        print(f"  first edit of the file (checked before the change too): ruff {first['ruff'] * 1000:.0f} ms, "
              f"ruff+mypy {first['ruff+mypy'] * 1000:.0f} ms")
        ruff_added = median["ruff"] - median["none"]
        print(f"ruff adds {ruff_added * 1000:.0f} ms per edit (target <= 500 ms: {'met' if ruff_added <= 0.5 else 'NOT met'}); "
              f"mypy adds {(median['ruff+mypy'] - median['ruff']) * 1000:.0f} ms more")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--modules", type=int, default=200)
    parser.add_argument("--sandbox", default="auto", choices=("auto", "on", "off"))
    args = parser.parse_args()
    anyio.run(main, args.rounds, args.modules, args.sandbox)
