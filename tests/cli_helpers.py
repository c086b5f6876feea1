"""Running the real `cog` console script in a subprocess, with a clean environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CASSETTE = ROOT / "fixtures" / "cassettes" / "calc_fix.jsonl"
REPLAY = f"replay:{CASSETTE}"

#: variables that would change what cog does; removed so tests see only what they set
CLEARED = (
    "COG_MODEL",
    "COG_TEST_COMMAND",
    "COG_MAX_STEPS",
    "COG_TIMEOUT",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "NO_COLOR",
    "GITHUB_STEP_SUMMARY",
    "GITHUB_ACTIONS",
    "CI",
    "COG_SANDBOX",
    "COG_CONTEXT_WINDOW",
    "COG_OPENAI_API",
)


def cog_argv() -> list[str]:
    script = Path(sys.executable).with_name("cog")
    return [str(script)] if script.exists() else [sys.executable, "-m", "cogcli"]


def cog_python() -> str:
    """The interpreter the ``cog`` console script runs with (its ``#!`` line), as cog names it."""
    script = Path(sys.executable).with_name("cog")
    if not script.exists():
        return sys.executable
    return script.read_text().splitlines()[0].removeprefix("#!").strip()


def cog_env(extra: Mapping[str, str] | None = None, *, ci: bool = True) -> dict[str, str]:
    """A clean environment for cog. ``CI=1`` unless ``ci=False``: off a terminal, cog refuses calls
    that need approval (edits, test runs) unless CI is set or --yes is given."""
    env = {k: v for k, v in os.environ.items() if k not in CLEARED and not k.startswith("PYTEST_")}
    env["PYTHONUNBUFFERED"] = "1"
    if ci:
        env["CI"] = "1"
    # no personal ~/.config/cog/AGENTS.md of whoever runs the tests (a test that wants one sets it)
    env["XDG_CONFIG_HOME"] = str(Path(__file__).resolve().parent / "no-such-config-dir")
    env.update(extra or {})
    return env


def run_cog(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 180,
    ci: bool = True,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*cog_argv(), *args],
        cwd=cwd,
        env=cog_env(env, ci=ci),
        input=input,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=timeout,
    )


def json_lines(stdout: str) -> list[dict[str, Any]]:
    """Every stdout line as JSON (fails the test on a line that is not)."""
    return [json.loads(line) for line in stdout.splitlines()]


def read_pty(fd: int) -> bytes:
    """Everything a program writes to the terminal whose main side is ``fd``, until it closes it."""
    out = b""
    while True:
        try:
            data = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not data:
            break
        out += data
    return out


def read_until(fd: int, needle: bytes, within: float = 60) -> bytes:
    """What the terminal ``fd`` shows until ``needle`` appears (or ``within`` seconds pass, or it closes)."""
    import select
    import time

    seen = b""
    deadline = time.monotonic() + within
    while needle not in seen and time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def repo_with(tmp_path: Path, files: dict[str, str]) -> Path:
    """A git repository ``tmp_path/repo`` holding ``files`` (path → text), nothing committed."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for rel, text in files.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text, encoding="utf-8")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    return repo
