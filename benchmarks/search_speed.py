"""search_text, list_files and git_diff on a real large tree (Django's sdist), against git itself.

    python benchmarks/search_speed.py [--tree DIR] [--rounds 5] [--no-venv]

Without ``--tree`` it fetches Django's source distribution from PyPI (``pip download --no-deps
--no-binary :all: django``) into ``~/.cache/cog-benchmarks``, unpacks it, makes it a git
repository (``git init && git add -A && git commit``) and adds an untracked ``.venv`` made by
``python -m venv`` (as a new user has: before Python 3.13 the venv brings no ``.gitignore``).

Prints, for each measurement, the median of ``--rounds`` alternating runs and the ratio
cog / git measured in this one run (targets: search_text ≤ 2× ``git grep``; git_diff of a
one-line change ≤ 0.5 s and ≤ 5 KB). The tools run through ``invoke_tool`` as in a run.
Not a test: timings depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from cogcli.contract.invoke import invoke_tool  # noqa: E402
from workspace_tools import workspace_tools  # noqa: E402

CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "cog-benchmarks"
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b.invalid", "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b.invalid"}
#: (search_text pattern, the same for git grep -E)
PATTERNS = [
    ("def get_queryset", "def get_queryset"),
    (r"class \w+Form\b", r"class \w+Form\b"),
    ("TODO", "TODO"),
]


def django_tree(with_venv: bool) -> Path:
    """Django's sdist unpacked as a committed git repository (made once, then reused)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    found = sorted(CACHE.glob("django-*/.git"))
    if found:
        tree = found[-1].parent
    else:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:", "django", "-d", str(CACHE)],
            check=True,
        )
        archive = sorted(CACHE.glob("[Dd]jango-*.tar.gz"))[-1]
        with tarfile.open(archive) as tar:
            tar.extractall(CACHE, filter="data")
        tree = CACHE / archive.name.removesuffix(".tar.gz").lower().replace("django", "django", 1)
        if not tree.exists():
            tree = next(p for p in CACHE.iterdir() if p.is_dir() and p.name.lower().startswith("django-"))
        for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "django sdist"]):
            subprocess.run(["git", *args], cwd=tree, check=True, env=GIT_ENV)
    if with_venv and not (tree / ".venv").exists():
        subprocess.run([sys.executable, "-m", "venv", str(tree / ".venv")], check=True)
    if not with_venv and (tree / ".venv").exists():
        shutil.rmtree(tree / ".venv")
    return tree


def timed(fn: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def call(tools: list[Any], name: str, **args: Any) -> Any:
    result = anyio.run(functools.partial(invoke_tool, name, args, tools=tools))
    if not result.ok:
        raise SystemExit(f"{name} failed: {result.error}")
    return result


def git(tree: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=tree, capture_output=True, check=False).stdout


def compare(label: str, rounds: int, ours: Any, theirs: Any) -> tuple[float, float]:
    ours(), theirs()  # warm the page cache and git's index
    a, b = [], []
    for _ in range(rounds):
        a.append(timed(ours)[0])
        b.append(timed(theirs)[0])
    cog, ref = statistics.median(a), statistics.median(b)
    print(f"{label:<44} cog {cog * 1000:7.1f} ms   git {ref * 1000:7.1f} ms   ratio {cog / ref:5.2f}x")
    return cog, ref


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, help="a git repository to measure in (default: Django's sdist)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--no-venv", action="store_true", help="measure without the untracked .venv")
    opts = parser.parse_args()
    tree = opts.tree.resolve() if opts.tree else django_tree(not opts.no_venv)
    tracked = len(git(tree, "ls-files", "-z").split(b"\0")) - 1
    print(f"tree: {tree} ({tracked:,} tracked files; load average {os.getloadavg()[0]:.2f})")
    tools = workspace_tools(tree)
    ratios = []
    for pattern, ere in PATTERNS:
        hits = len(call(tools, "search_text", pattern=pattern).details["matches"])
        cog, ref = compare(
            f"search_text {pattern!r} ({hits} shown)",
            opts.rounds,
            lambda: call(tools, "search_text", pattern=pattern),
            lambda: git(tree, "grep", "-n", "-I", "-E", "-e", ere),
        )
        ratios.append(cog / ref)
    compare("list_files", opts.rounds, lambda: call(tools, "list_files"), lambda: git(tree, "ls-files", "-z", "-co", "--exclude-standard"))
    target = next(p for p in sorted(tree.rglob("*.py")) if ".venv" not in p.parts and p.stat().st_size > 200)
    original = target.read_bytes()
    target.write_bytes(b"# one changed line\n" + original)
    try:
        cog, _ = compare("git_diff of a one-line change", opts.rounds, lambda: call(tools, "git_diff"), lambda: git(tree, "status", "--porcelain"))
        result = call(tools, "git_diff")
        size = len(json.dumps({"result": result.result, "details": result.details}))
        print(f"{'git_diff result size':<44} {size:,} bytes (target ≤ 5,000; ≤ 0.5 s: {'ok' if cog <= 0.5 else 'over'})")
    finally:
        target.write_bytes(original)
    worst = max(ratios)
    print(f"search_text vs git grep: worst ratio {worst:.2f}x (target ≤ 2x: {'ok' if worst <= 2 else 'over'})")


if __name__ == "__main__":
    main()
