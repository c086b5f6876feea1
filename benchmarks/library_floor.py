"""The floor under issue 53's start-up targets: what the product card's own libraries cost before
cog does anything, against ``python -c pass`` in the same rounds.

    python benchmarks/library_floor.py [--runs 12]

Two programs of a few lines, each with every start-up trick cog's command line uses (pydantic's
plugin lookup replaced, :func:`cogcli.cli.lean_start.no_pydantic_plugins`; httpx without its command
line and trio; no certificate store for a plain ``http`` server):

- **request**: import pydantic, anyio and httpx, declare two pydantic models, stream one chat request
  to a loopback OpenAI-compatible server (tests/model_servers.py): the time until the request
  arrives (``cog edit``'s first request does this and its whole session set-up; target 0.20 s);
- **call**: validate a tool's parameters with a pydantic model and run one coroutine under
  ``anyio.run``, the least a one-off ``cog tool NAME`` does (target: ``python -c pass`` + 0.15 s).

Not a test: times depend on the machine and its load; read them against ``python -c pass``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from model_servers import OpenAIServer, RecordedRequest, Reply  # noqa: E402

LEAN = """
import sys
from cogcli.cli.lean_start import no_pydantic_plugins
no_pydantic_plugins()
sys.modules["httpx._main"] = None
sys.modules["trio"] = None
"""

REQUEST = LEAN + """
import ssl
import anyio, httpx
from pydantic import BaseModel
class Message(BaseModel):
    role: str
    content: str
class Body(BaseModel):
    model: str
    messages: list[Message]
    stream: bool = True
async def main():
    body = Body(model="gpt-4o", messages=[Message(role="user", content="say ok")])
    async with httpx.AsyncClient(verify=ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)) as client:
        async with client.stream("POST", sys.argv[1], content=body.model_dump_json(), headers={"authorization": "Bearer x"}) as response:
            async for _ in response.aiter_bytes():
                pass
anyio.run(main)
"""

CALL = LEAN + """
import anyio
from pydantic import BaseModel
class Params(BaseModel):
    path: str = "."
class Result(BaseModel):
    content: str
async def main():
    print(Result(content=Params.model_validate({"path": "."}).path).model_dump_json())
anyio.run(main)
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    options = parser.parse_args()
    arrivals: list[float] = []

    def answer(request: RecordedRequest) -> Reply:
        arrivals.append(time.perf_counter())
        return Reply("ok")

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYDANTIC_")}
    bare: list[float] = []
    request: list[float] = []
    call: list[float] = []
    with OpenAIServer([answer] * (options.runs + 2)) as server:
        url = server.base_url + "/chat/completions"
        for i in range(options.runs + 1):
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", "pass"], check=True)
            python = time.perf_counter() - started
            arrivals.clear()
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", REQUEST, url], check=True, capture_output=True, env=env)
            first = arrivals[0] - started
            started = time.perf_counter()
            subprocess.run([sys.executable, "-c", CALL], check=True, capture_output=True, env=env)
            whole = time.perf_counter() - started
            if i:  # the first round warms the caches
                bare.append(python)
                request.append(first)
                call.append(whole)
    py = statistics.median(bare)
    print(f"load {os.getloadavg()[0]:.2f}, {options.runs} runs (medians)")
    print(f"python -c pass                                  {py * 1000:5.0f} ms")
    print(f"request: arrives at the server                  {statistics.median(request) * 1000:5.0f} ms   (target for cog edit: 200 ms)")
    print(f"call: pydantic-validated + anyio.run, whole     {statistics.median(call) * 1000:5.0f} ms   "
          f"+{(statistics.median(call) - py) * 1000:.0f} ms over python (target for cog tool NAME: +150 ms)")


if __name__ == "__main__":
    main()
