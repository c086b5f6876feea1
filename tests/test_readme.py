"""The README's first lines stay true (issue 43): its second command, the offline demo, runs as
written from a checkout and exits 0, and the follow-ups a newcomer types next work in the demo's
folder (it is a repository)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from cli_helpers import cog_env

ROOT = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(encoding="utf-8"), re.DOTALL)
    assert block, "the README starts with a bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_starts_with_an_install_and_the_offline_demo() -> None:
    install, demo = readme_commands()
    assert "pip install -e ." in install and "[dev]" not in install  # the light install: what the demo needs
    assert "replay:fixtures/cassettes/calc_fix.jsonl" in demo


def test_the_readme_demo_runs_as_written_and_its_follow_ups_work(tmp_path: Path) -> None:
    _, demo = readme_commands()
    env = cog_env({"TMPDIR": str(tmp_path)}, ci=False)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # this venv's cog, as after the install
    out = subprocess.run(["bash", "-c", demo + ' && echo "DEMO=$d"'], cwd=ROOT, env=env, stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-2].startswith("Done · 5 steps · 1 file changed (+1 -1) · 3 tests passed")
    folder = Path(out.stdout.splitlines()[-1].removeprefix("DEMO="))
    for follow_up in (["thread", "list"], ["undo", "--dry-run"], ["undo"]):
        step = subprocess.run([sys.executable, "-m", "cogcli", *follow_up], cwd=folder, env=env, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        assert step.returncode == 0, (follow_up, step.stderr)
    assert "return a - b" in (folder / "calc" / "ops.py").read_text()  # undone
