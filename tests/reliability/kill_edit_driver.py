"""Kill edit_file mid-write, many times, cheaply: imports cog once, then for each round forks a
child that runs edit_file (through invoke_tool) on a large file in a loop — swapping one marker
line back and forth — and SIGKILLs it after a seeded random delay. After each kill the file must
be exactly one of its two versions.

    python kill_edit_driver.py WORKSPACE ROUNDS SEED

Prints one JSON object: rounds, bad (rounds whose file was neither version), mid_write (kills
that left the temp file of an unfinished write behind), changed (rounds in which at least one
edit completed), edit_ms (one edit's time, measured before forking).
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import sys
import time
from pathlib import Path

NAME = "big.txt"
LINES = 25_000  # ≈ 0.5 MB: most of an edit's time is spent writing it (and fsync)


def main() -> None:
    root, rounds, seed = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])

    import cogcli.contract.invoke  # noqa: F401
    from cogcli.contract.context import ToolContext
    from workspace_tools import workspace_tools

    edit = next(t for t in workspace_tools(root, include_git=False) if t.name == "edit_file")
    middle = LINES // 2
    body = [f"line {i}: some ordinary text to make the file big\n" for i in range(LINES)]
    versions = {}
    for mark in ("A", "B"):
        body[middle] = f"MARKER {mark}\n"
        versions[mark] = "".join(body).encode()
    target = root / NAME
    target.write_bytes(versions["A"])

    def params(current: str) -> object:
        other = "B" if current == "A" else "A"
        return edit.parameters(path=NAME, old_text=f"MARKER {current}\n", new_text=f"MARKER {other}\n")

    def params_and_context(current: str) -> tuple[object, object]:
        return params(current), ToolContext("kill-test", "edit_file")

    # one edit in this process, without threads (a process that forks must have none)
    started = time.perf_counter()
    edit.execute(*params_and_context("A"))
    edit.execute(*params_and_context("B"))
    edit_s = (time.perf_counter() - started) / 2

    rng = random.Random(seed)
    bad: list[int] = []
    mid_write = changed = 0
    for n in range(rounds):
        before = target.read_bytes()
        delay = rng.uniform(0, 3 * edit_s)
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: edit until killed
            try:
                os.close(ready_r)
                _edit_forever(edit, params, target, ready_w)
            finally:
                os._exit(0)
        os.close(ready_w)
        if not select.select([ready_r], [], [], 60)[0]:
            raise SystemExit("the child never started editing")
        os.close(ready_r)
        time.sleep(delay)  # counted from the start of the child's first edit
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        now = target.read_bytes()
        if now not in (versions["A"], versions["B"]):
            bad.append(n)
            target.write_bytes(versions["A"])
        elif now != before:
            changed += 1
        leftovers = [p for p in root.iterdir() if p.name.startswith(f".{NAME}.") and p.name.endswith(".cogtmp")]
        if leftovers:
            mid_write += 1
            for p in leftovers:
                p.unlink()
    others = sorted(p.name for p in root.iterdir() if p.name != NAME)
    print(json.dumps({"rounds": rounds, "bad": bad, "mid_write": mid_write, "changed": changed, "edit_ms": edit_s * 1000, "others": others}))


def _edit_forever(edit: object, params: object, target: Path, ready: int) -> None:
    import anyio

    from cogcli.contract.invoke import invoke_tool

    async def loop() -> None:
        os.write(ready, b".")
        while True:
            current = "A" if b"MARKER A\n" in target.read_bytes() else "B"
            result = await invoke_tool(edit, params(current).model_dump())  # type: ignore[attr-defined]
            if result.error:
                print(result.error, file=sys.stderr)
                os._exit(3)

    anyio.run(loop)


if __name__ == "__main__":
    main()
