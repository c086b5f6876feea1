"""Time from a `cog chat` process's start to its first keystroke-ready prompt, on a real terminal
(a pty driven by pexpect), against a loopback OpenAI-compatible server (issue 53: ≤ 0.30 s).

    python benchmarks/chat_prompt.py [--runs 7] [--before DIR]

Each round starts ``python -c pass`` and ``cog chat --model openai:gpt-4o`` in a fresh git
repository (a copy of fixtures/calc) with its own HOME and state folders, on a pty of 40×140.
Printed, medians: when ``cog>`` is drawn (the prompt), and when a key typed at once after it is
echoed back by the line editor (keystroke-ready: the editor reads the terminal); then Ctrl-D
leaves. ``--before DIR``: an older ``cogcli`` and ``workspace_tools`` (``git archive BASE cogcli
workspace_tools | tar -x -C DIR``) on ``PYTHONPATH`` in the same rounds, interleaved. The first
round of each tree warms caches (byte code, the kept tool specs) and is not counted. Not a test:
times depend on the machine and its load.
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

import pexpect

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from model_servers import OpenAIServer, Reply  # noqa: E402

PROMPT = "cog>"  # drawn with colour codes around it


def make_repo(repo: Path) -> Path:
    shutil.copytree(ROOT / "fixtures" / "calc", repo)
    subprocess.run(["git", "init", "-q", "."], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "i"], cwd=repo, check=True)
    return repo


def one_chat(repo: Path, env: dict[str, str]) -> tuple[float, float]:
    """(prompt drawn, key echoed) after the process started, in seconds."""
    started = time.perf_counter()
    child = pexpect.spawn(sys.executable, ["-m", "cogcli", "chat", "--model", "openai:gpt-4o"], cwd=str(repo), env=env,
                          encoding="utf-8", timeout=60, dimensions=(40, 140))
    try:
        child.expect_exact(PROMPT)
        prompt = time.perf_counter() - started
        child.send("z")
        child.expect_exact("z")
        echoed = time.perf_counter() - started
        child.sendcontrol("u")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return prompt, echoed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--before", type=Path, metavar="DIR", help="an older tree, run in the same rounds")
    options = parser.parse_args()
    print(f"load {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs, {options.runs} runs (medians)")
    with tempfile.TemporaryDirectory() as tmp, OpenAIServer([lambda r: Reply("ok")] * 4) as server:
        home = Path(tmp) / "home"
        home.mkdir()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("COG_", "OPENAI_", "ANTHROPIC_"))}
        env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_STATE_HOME=str(home / ".state"),
                   XDG_DATA_HOME=str(home / ".data"), XDG_CACHE_HOME=str(home / ".cache"), OPENAI_API_KEY="sk-test",
                   OPENAI_BASE_URL=server.base_url, TERM="xterm-256color", PROMPT_TOOLKIT_NO_CPR="1")
        trees = {"after": env}
        if options.before is not None:
            trees = {"before": {**env, "PYTHONPATH": str(options.before.resolve())}, "after": env}
        prompts: dict[str, list[float]] = {k: [] for k in trees}
        echoes: dict[str, list[float]] = {k: [] for k in trees}
        bare: list[float] = []
        for i in range(options.runs + 1):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            python = time.perf_counter() - started
            for name, tree_env in trees.items():
                prompt, echoed = one_chat(make_repo(Path(tmp) / f"repo-{name}-{i}"), tree_env)
                if i:
                    prompts[name].append(prompt)
                    echoes[name].append(echoed)
            if i:
                bare.append(python)
    py = statistics.median(bare)
    print(f"python -c pass: {py * 1000:.0f} ms")
    print(f"{'tree':<8} {'prompt drawn':>13} {'key echoed':>11}")
    for name in prompts:
        print(f"{name:<8} {statistics.median(prompts[name]) * 1000:10.0f} ms {statistics.median(echoes[name]) * 1000:8.0f} ms   each: "
              + " ".join(f"{x * 1000:.0f}" for x in echoes[name]))
    if "before" in prompts:
        print(f"after/before: key echoed {statistics.median(echoes['after']) / statistics.median(echoes['before']):.2f}")
    print("target: first keystroke-ready prompt ≤ 300 ms after start")


if __name__ == "__main__":
    main()
