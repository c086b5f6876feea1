"""Studio with a long thread (issue 53): the page of a 2,000-step thread in headless Chromium.

    python benchmarks/studio_rows.py [--steps 2000] [--rounds 3] [--repo DIR --thread ID] [--before TREE]

The thread is built as ``benchmarks/long_thread.py`` builds it (a scripted model, one real session
run: reads, edits, new files, listings, searches, test runs), or taken from ``--repo``/``--thread``
(``long_thread.py --keep DIR`` leaves one in ``DIR/repo``; give ``XDG_STATE_HOME=DIR/state`` too).
``cog serve`` serves it; Selenium drives the system's chromium (nothing downloaded). Each round opens
``/threads/ID`` in a fresh tab and measures, in the page's own clock (``performance.now()``):

- **first rows drawn**: from navigation start to the first frame painted after the page's first
  row is in (a task after the next animation frame: a script added to the page sees it);
- **all rows drawn**: to the frame after the last row is drawn (the continue form is in and the
  view says it is not ``drawing``);
- **scrolling**: the time between animation frames while the page scrolls 150 px a frame from
  top to bottom, and while it jumps to 10 places at random (a scrollbar dragged); p50, p95, max
  and frames over 50 ms;
- **a new live row**: ``tool-call-start`` + ``tool-call-end`` handed to the view, to the task after
  the frame that drew it (20 rows, median), and a row's result likewise;
- the page's JS heap and DOM nodes.

``--before TREE`` (a folder with another ``cogcli``, e.g. ``git archive BASE cogcli workspace_tools``):
a second ``cog serve`` runs that tree (on ``PYTHONPATH``: its server and its page) and the rounds
alternate between the two, each tree's figures printed apart.

Targets (docs: issue 53): the page draws and stays responsive — frames while scrolling under 50 ms
at p95, a new row within a frame or two. Not a test: times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

SCROLL = """
const done = arguments[arguments.length - 1];
const jumps = arguments[0];
const deltas = [], jumped = [];
let last = null, mode = 'down', n = 0;
window.scrollTo(0, 0);
const step = (t) => {
  if (last !== null) (mode === 'down' ? deltas : jumped).push(t - last);
  last = t;
  const bottom = document.documentElement.scrollHeight - window.innerHeight;
  if (mode === 'down') {
    if (window.scrollY >= bottom - 1 || deltas.length >= 150) { mode = 'jump'; }
    else window.scrollBy(0, 150);
  }
  if (mode === 'jump') {
    if (n >= jumps) { done({ deltas, jumped, height: document.documentElement.scrollHeight }); return; }
    n++;
    window.scrollTo(0, Math.floor(Math.random() * bottom));
  }
  requestAnimationFrame(step);
};
requestAnimationFrame(step);
"""

NEW_ROWS = """
const done = arguments[arguments.length - 1];
const view = window.cogView;
view.live = true;
const rows = [], results = [];
let i = 0;
const painted = (then) => requestAnimationFrame(() => setTimeout(then, 0));
const one = () => {
  if (i >= 20) { done({ rows, results }); return; }
  const id = 'bench_' + i++;
  const t0 = performance.now();
  view.handle({ type: 'tool-call-start', id, toolName: 'read_file', presentation: { label: 'Read file', icon: 'file', detail: 'src/new_' + i + '.py' } });
  view.handle({ type: 'tool-call-end', id, toolName: 'read_file', arguments: { path: 'src/new_' + i + '.py' } });
  painted(() => {
    if (!document.querySelector('section.call[data-call-id="' + id + '"] .label').textContent) throw new Error('not drawn');
    rows.push(performance.now() - t0);
    const t1 = performance.now();
    view.handle({ type: 'tool-result', id, toolCallId: id, toolName: 'read_file', result: 'line\\n'.repeat(50), durationMs: 3 });
    painted(() => { results.push(performance.now() - t1); setTimeout(one, 30); });
  });
};
one();
"""


def quantiles(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    if not values:
        return {"n": 0, "p50": 0.0, "p95": 0.0, "max": 0.0, "over50": 0}
    return {"n": len(values), "p50": statistics.median(values), "p95": values[min(len(values) - 1, int(0.95 * len(values)))],
            "max": values[-1], "over50": sum(1 for v in values if v > 50)}


#: added to every page before its own scripts (Chrome DevTools Protocol): notes, in the page's clock,
#: the frame after the first row is in and the frame after the last is drawn (the continue form is in
#: and the view draws no more), whatever version of the page it is
WATCH = """
window.__bench = {};
const painted = (key) => requestAnimationFrame(() => setTimeout(() => { window.__bench[key] = performance.now(); }, 0));
new MutationObserver(() => {
  const b = window.__bench;
  if (b.firstSeen === undefined && document.querySelector('section.call')) { b.firstSeen = performance.now(); painted('first'); }
  if (b.allSeen === undefined && document.getElementById('newrun') && window.cogView && !window.cogView.drawing) { b.allSeen = performance.now(); painted('all'); }
}).observe(document, { childList: true, subtree: true });
"""


def one_round(driver: Any, url: str, rows: int) -> dict[str, Any]:
    from browser_helpers import wait_for

    driver.get("about:blank")
    started = time.perf_counter()
    driver.get(url)
    wait_for(driver, lambda d: d.execute_script("return !!(window.__bench && window.__bench.all)"), timeout=600,
             message="the thread page never finished drawing")
    wall = time.perf_counter() - started
    marks = driver.execute_script("""
        return { first: window.__bench.first, all: window.__bench.all,
                 rows: document.querySelectorAll('section.call').length, nodes: document.getElementsByTagName('*').length,
                 heap: performance.memory ? performance.memory.usedJSHeapSize : null };""")
    if marks["rows"] < rows:
        raise SystemExit(f"the page drew {marks['rows']} rows, expected {rows}")
    scroll = driver.execute_async_script(SCROLL, 10)
    fresh = driver.execute_async_script(NEW_ROWS)
    return {"wall": wall, **marks, "scroll": scroll, "fresh": fresh}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repo", type=Path, help="a workspace that has the thread (else one is built)")
    parser.add_argument("--thread", help="the thread's id in --repo")
    parser.add_argument("--before", type=Path, help="a tree with another cogcli, served alongside, rounds alternating")
    options = parser.parse_args()
    from browser_helpers import chromium
    from serve_helpers import Served

    print(f"load {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if options.repo and options.thread:
            repo, thread = options.repo, options.thread
        else:
            import anyio
            from long_thread import build, make_repo

            os.environ.update(XDG_STATE_HOME=str(folder / "state"), XDG_CONFIG_HOME=str(folder / "no-config"), OPENAI_API_KEY="sk-test")
            repo = make_repo(folder)
            started = time.perf_counter()
            thread, _ = anyio.run(build, repo, options.steps)
            print(f"built thread {thread} ({options.steps} steps) in {time.perf_counter() - started:.1f} s")
        driver = chromium(folder / "profile")
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": WATCH})
        driver.set_script_timeout(600)
        trees = {"after": None, **({"before": str(options.before.resolve())} if options.before else {})}
        results: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        env = {k: os.environ[k] for k in ("XDG_STATE_HOME",) if k in os.environ}
        try:
            with contextlib.ExitStack() as stack:
                served = {name: stack.enter_context(Served(repo, env={**env, **({"PYTHONPATH": tree} if tree else {})}))
                          for name, tree in trees.items()}
                for name, srv in served.items():
                    listed = srv.client.get(f"/api/threads/{thread}/events").json()
                    started = time.perf_counter()
                    srv.client.get(f"/api/threads/{thread}/events")
                    api_events = time.perf_counter() - started
                    started = time.perf_counter()
                    srv.client.get("/api/threads")
                    api_threads = time.perf_counter() - started
                    print(f"{name}: GET /api/threads/ID/events {api_events * 1000:.0f} ms ({len(listed)} events); GET /api/threads {api_threads * 1000:.0f} ms")
                rows = sum(1 for e in listed if e["type"] == "tool-call-start")
                for _ in range(options.rounds):
                    for name, srv in served.items():
                        results[name].append(one_round(driver, f"{srv.base}/threads/{thread}?token={srv.token}", rows))
        finally:
            driver.quit()
    for name, rounds in results.items():
        print(f"--- {name}" + (f" ({trees[name]})" if trees[name] else ""))
        report(rounds)
    print(f"load {os.getloadavg()[0]:.2f}")


def report(results: list[dict[str, Any]]) -> None:
    med = lambda key: statistics.median(r[key] for r in results if r[key] is not None) if any(r[key] is not None for r in results) else float("nan")  # noqa: E731
    print(f"rows {results[0]['rows']}, DOM nodes {results[0]['nodes']}, JS heap {(results[0]['heap'] or 0) / 2**20:.1f} MiB")
    print(f"first rows drawn {med('first'):.0f} ms, all rows drawn {med('all'):.0f} ms (page clock, median of {len(results)}); "
          f"page ready seen by Selenium {med('wall') * 1000:.0f} ms")
    down = quantiles([d for r in results for d in r["scroll"]["deltas"]])
    jumps = quantiles([d for r in results for d in r["scroll"]["jumped"]])
    rows_q = quantiles([d for r in results for d in r["fresh"]["rows"]])
    res_q = quantiles([d for r in results for d in r["fresh"]["results"]])
    for name, q in (("scrolling, frame to frame", down), ("jumps (scrollbar), frame", jumps), ("a new live row drawn", rows_q), ("its result drawn", res_q)):
        print(f"{name:<28} n={q['n']:<5} p50 {q['p50']:6.1f} ms  p95 {q['p95']:6.1f} ms  max {q['max']:7.1f} ms  over 50 ms: {q['over50']}")

if __name__ == "__main__":
    main()
