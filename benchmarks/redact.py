"""Redaction cost: cogcli.secrets.redactor.redact over 1 MB of source code and 1 MB of random text, against
``json.dumps`` of the same text (what writing it as one event line costs anyway), in one run.

    python benchmarks/redact.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import string
import time
from pathlib import Path

from cogcli.secrets.redactor import redact


def best(fn, rounds: int) -> float:  # type: ignore[no-untyped-def]
    fn()
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    os.environ.setdefault("BENCH_SERVICE_API_KEY", "Zq7#envSecret!v4lue")
    source = "".join(p.read_text() for p in sorted(Path("cogcli").rglob("*.py")))
    code = (source * (1_000_000 // len(source) + 1))[:1_000_000]
    rng = random.Random(1)
    noise = "".join(rng.choices(string.ascii_letters + string.digits + " \n=:_-./", k=1_000_000))
    print(f"load average {os.getloadavg()[0]:.1f}")
    for name, text in (("source code", code), ("random text", noise)):
        r = best(lambda: redact(text), rounds)
        j = best(lambda: json.dumps(text), rounds)
        print(f"{name:12} 1 MB: redact {r * 1000:7.1f} ms, json.dumps {j * 1000:6.1f} ms, ratio {r / j:5.1f}x")


if __name__ == "__main__":
    main()
