"""Helpers for the per-runner tests: fixture projects copied to a temp dir (their installed
``node_modules`` linked, not copied), toolchain checks that skip loudly, and the gate that proves
updates arrive while the runner still runs."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from cogcli import ToolUpdate

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def need(program: str, install: str) -> None:
    """Skip, saying so loudly, when ``program`` is not installed (.ci/run installs it)."""
    if shutil.which(program) is None:
        pytest.skip(f"NOT TESTED: {program} is not installed here ({install}; .ci/run installs it)")


def copy_project(name: str, dest: Path, *, modules: str = "link") -> Path:
    """``fixtures/NAME`` copied to ``dest/NAME``; its ``node_modules`` (installed by ``npm ci``,
    which .ci/run runs) is linked, or with ``modules="copy"`` copied (hard links where they can be):
    the sandbox shows no link out of the workspace whose target it hides (a checkout under /tmp).
    Skips loudly when a Node fixture's install is missing."""
    source = FIXTURES / name
    if (source / "package-lock.json").exists() and not (source / "node_modules").is_dir():
        pytest.skip(f"NOT TESTED: fixtures/{name}/node_modules is missing: run `npm ci` in fixtures/{name} (.ci/run does)")
    target = dest / name
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("node_modules", "target", "Cargo.lock", "__pycache__"))
    if (source / "node_modules").is_dir() and modules == "copy":
        shutil.copytree(source / "node_modules", target / "node_modules", symlinks=True, copy_function=_link_or_copy)
    elif (source / "node_modules").is_dir():
        (target / "node_modules").symlink_to(source / "node_modules")
    return target


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:  # another file system
        shutil.copy2(source, target)


def gate(folder: Path, seen: list[str]) -> Any:
    """Turn on the fixture's gate test in ``folder``: it waits for gate.flag, created here when the
    first update arrives, so a passing gate test proves updates stream while the runner runs."""
    (folder / "gate.enabled").touch()

    def on_update(update: ToolUpdate) -> None:
        seen.append(update.content or "")
        (folder / "gate.flag").touch()

    return on_update
