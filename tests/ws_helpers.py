"""Helpers for the workspace tool tests: call a tool the way a run does, check diffs with real git."""

from __future__ import annotations

import functools
import shutil
import subprocess
from pathlib import Path
from typing import Any

import anyio
from unidiff import PatchSet

from cogcli.contract.invoke import ToolResult, invoke_tool
from cogcli.contract.tool import Tool


def call(tools: list[Tool[Any]], name: str, **args: Any) -> ToolResult:
    """Run one tool call through invoke_tool (validation, thread, split) and return its result."""
    return anyio.run(functools.partial(invoke_tool, name, args, tools=tools))


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (``.git`` left out) with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and ".git" not in p.relative_to(root).parts
    }


def copy_tree(src: Path, dest: Path) -> Path:
    shutil.copytree(src, dest, symlinks=True)
    return dest


def assert_diff_applies(before: Path, after: Path, diff: str, *, encoding: str = "utf-8") -> None:
    """``diff`` parses with unidiff, and ``git apply`` turns a copy of ``before`` into ``after``."""
    patch = PatchSet(diff)
    # unidiff reads every file, hunk and line (it writes "-1,1" where git writes "-1": same hunk)
    assert len(patch) == diff.count("diff --git ")
    assert sum(len(f) for f in patch) == sum(1 for line in diff.splitlines() if line.startswith("@@ "))
    assert (sum(f.added for f in patch), sum(f.removed for f in patch)) == diff_counts(diff)
    data = diff.encode(encoding)
    check = subprocess.run(["git", "apply", "--check", "-"], cwd=before, input=data, capture_output=True)
    assert check.returncode == 0, check.stderr.decode()
    done = subprocess.run(["git", "apply", "-"], cwd=before, input=data, capture_output=True)
    assert done.returncode == 0, done.stderr.decode()
    assert snapshot(before) == snapshot(after)


def diff_counts(diff: str) -> tuple[int, int]:
    """(added, removed) lines counted by hand from the hunk bodies, to check the tools' numbers."""
    added = removed = 0
    in_hunk = False
    for line in diff.splitlines():
        if line.startswith("@@"):
            in_hunk = True
        elif line.startswith("diff --git"):
            in_hunk = False
        elif in_hunk and line.startswith("+"):
            added += 1
        elif in_hunk and line.startswith("-"):
            removed += 1
    return added, removed
