"""How long an event takes from the run's emitter to whoever watches `cog serve`.

One run of ``run_tests`` on a generated suite (one ``tool-update`` per test, a steady stream),
replayed three ways in the same invocation:

- baseline: ``cog edit --json`` read line by line from a pipe (what a program driving cog gets);
- SSE: ``cog serve``, the run's ``/events`` stream read with httpx as a client parses SSE;
- browser: the Studio page in headless Chromium: emit → the page's event handler, and emit → the
  animation frame that drew it (``--no-browser`` skips this).

Latency of an event = the time it was received − its ``timestamp`` (stamped at emit, to the
millisecond, on this machine's clock). Target: the browser draws an event within 50 ms of its emit.

    python benchmarks/serve_latency.py [--tests 300] [--no-browser]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from serve_helpers import Served, write_cassette  # noqa: E402


def make_repo(root: Path, n_tests: int) -> None:
    (root / "pyproject.toml").write_text('[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    (root / "tests").mkdir()
    body = "import time\n\n" + "\n\n".join(f"def test_{i}():\n    time.sleep(0.004)" for i in range(n_tests))
    (root / "tests" / "test_gen.py").write_text(body + "\n")
    env = {**os.environ, "GIT_AUTHOR_NAME": "b", "GIT_AUTHOR_EMAIL": "b@b", "GIT_COMMITTER_NAME": "b", "GIT_COMMITTER_EMAIL": "b@b"}
    for cmd in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-qm", "suite"]):
        subprocess.run(cmd, cwd=root, check=True, env=env)


def emitted(event: dict[str, Any]) -> float:
    return datetime.fromisoformat(event["timestamp"].replace("Z", "+00:00")).timestamp()


def stats(name: str, ms: list[float]) -> dict[str, float]:
    ms = sorted(ms)
    q = lambda p: ms[min(len(ms) - 1, int(p * len(ms)))]  # noqa: E731
    out = {"n": len(ms), "p50": statistics.median(ms), "p95": q(0.95), "p99": q(0.99), "max": ms[-1]}
    print(f"{name:<26} n={out['n']:<5} p50 {out['p50']:6.2f} ms  p95 {out['p95']:6.2f} ms  p99 {out['p99']:6.2f} ms  max {out['max']:6.2f} ms")
    return out


def baseline(repo: Path, model: str) -> list[float]:
    from cli_helpers import cog_argv, cog_env

    proc = subprocess.Popen([*cog_argv(), "edit", "--json", "--model", model, "Run the tests"], cwd=repo, env=cog_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None
    out = []
    for line in proc.stdout:
        now = time.time()
        event = json.loads(line)
        if event["type"] == "tool-update":
            out.append((now - emitted(event)) * 1000)
    proc.wait()
    return out


def over_sse(repo: Path, model: str) -> list[float]:
    out = []
    with Served(repo, model=model) as srv:
        run = srv.start("Run the tests", approval="auto")
        for frame in srv.sse(f"/api/runs/{run['runId']}/events"):
            now = time.time()
            if frame.data in (None, "[DONE]"):
                continue
            event = frame.event
            if event["type"] == "tool-update":
                out.append((now - emitted(event)) * 1000)
    return out


def in_browser(repo: Path, model: str, profile: Path) -> tuple[list[float], list[float]]:
    from browser_helpers import chromium, wait_for

    driver = chromium(profile)
    try:
        with Served(repo, model=model) as srv:
            run = srv.start("Run the tests", approval="ask")
            driver.get(f"{srv.base}/runs/{run['runId']}?token={srv.token}")
            wait_for(driver, lambda d: d.execute_script("return !!window.cogView && document.querySelectorAll('.approval button').length > 0"))
            driver.execute_script("""
                const view = window.cogView;
                window.handled = []; window.drawn = [];
                const handle = view.handle.bind(view);
                view.handle = (ev) => {
                  handle(ev);
                  if (ev.type !== 'tool-update') return;
                  const at = Date.parse(ev.timestamp);
                  window.handled.push(Date.now() - at);
                  requestAnimationFrame(() => window.drawn.push(Date.now() - at));
                };""")
            call = srv.client.get(f"/api/runs/{run['runId']}").json()["pendingApprovals"][0]["toolCallId"]
            srv.post(f"/api/runs/{run['runId']}/approvals", {"toolCallId": call, "approved": True})
            wait_for(driver, lambda d: d.find_elements("css selector", "[data-block=finish]"), timeout=300)
            time.sleep(0.2)
            return driver.execute_script("return window.handled"), driver.execute_script("return window.drawn")
    finally:
        driver.quit()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.tests} tests, one tool-update each")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        model = write_cassette(base / "run.jsonl", [
            {"toolCalls": [{"id": "t1", "name": "run_tests", "arguments": {}}]}, {"text": "Ran them."}])
        repos = {}
        for name in ("pipe", "sse", "browser"):
            repos[name] = base / name
            repos[name].mkdir()
            make_repo(repos[name], args.tests)
        pipe = stats("cog edit --json (pipe)", baseline(repos["pipe"], model))
        sse = stats("cog serve SSE (httpx)", over_sse(repos["sse"], model))
        print(f"SSE / pipe p50 ratio: {sse['p50'] / max(pipe['p50'], 0.5):.2f}x (floor 0.5 ms: timestamps are to the ms)")
        if not args.no_browser and shutil.which("chromium"):
            handled, drawn = in_browser(repos["browser"], model, base / "profile")
            stats("browser: handled", handled)
            page = stats("browser: drawn (next frame)", drawn)
            verdict = "meets" if page["p95"] <= 50 else "misses"
            print(f"browser drawn p95 {page['p95']:.1f} ms: {verdict} the 50 ms target")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
