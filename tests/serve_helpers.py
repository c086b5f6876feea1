"""Running the real ``cog serve`` in a subprocess on loopback, and reading its SSE as a client does.

    with Served(repo, model=REPLAY) as srv:
        run = srv.post("/api/runs", {"input": "Fix it", "approval": "auto"}).json()
        frames = list(srv.sse(f"/api/runs/{run['runId']}/events"))
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
from cli_helpers import cog_argv, cog_env


def write_cassette(path: Path, turns: list[dict[str, Any]]) -> str:
    lines = [{"type": "cassette", "schemaVersion": 1, "model": "test:scripted"}, *({"type": "turn", **t} for t in turns)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return f"replay:{path}"


@dataclass
class Frame:
    """One dispatched SSE event (or a comment line, with ``comment`` set)."""

    id: str | None = None
    data: str | None = None
    comment: str | None = None

    @property
    def event(self) -> dict[str, Any]:
        assert self.data is not None
        return json.loads(self.data)


def parse_sse(lines: Iterator[str]) -> Iterator[Frame]:
    """SSE as the spec reads it: fields until a blank line dispatch; ``:`` starts a comment."""
    data: list[str] = []
    current = Frame()
    for line in lines:
        if line == "":
            if data:
                current.data = "\n".join(data)
                yield current
            current, data = Frame(), []
            continue
        if line.startswith(":"):
            yield Frame(comment=line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "data":
            data.append(value)
        elif name == "id":
            current.id = value


@dataclass
class Served:
    root: Path
    model: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    url: str = ""
    base: str = ""
    token: str = ""

    def __enter__(self) -> Served:
        cmd = [*cog_argv(), "serve", "-C", str(self.root), *(["--model", self.model] if self.model else []), *self.args]
        self.log = open(self.root.parent / f"serve-{os.getpid()}-{id(self)}.log", "w+")
        self.proc = subprocess.Popen(cmd, env=cog_env(self.env), stdout=subprocess.PIPE, stderr=self.log, text=True)
        assert self.proc.stdout is not None
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(timeout=30):
            self.proc.kill()
            raise AssertionError(f"cog serve printed no URL: {self.stderr()}")
        self.url = self.proc.stdout.readline().strip()
        parts = urlsplit(self.url)
        assert parts.scheme == "http" and parts.path == "/", self.url + self.stderr()
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = parse_qs(parts.query)["token"][0]
        self.client = httpx.Client(base_url=self.base, headers={"Authorization": f"Bearer {self.token}"}, timeout=60)
        return self

    def __exit__(self, *exc: object) -> None:
        self.client.close()
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.log.close()

    def stderr(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()

    def post(self, path: str, body: Any = None) -> httpx.Response:
        return self.client.post(path, json=body)

    def start(self, text: str = "Fix the failing test", **body: Any) -> dict[str, Any]:
        response = self.post("/api/runs", {"input": text, **body})
        assert response.status_code == 201, response.text
        return response.json()

    def sse(self, path: str, *, last_event_id: int | None = None) -> Iterator[Frame]:
        headers = {"Accept": "text/event-stream"}
        if last_event_id is not None:
            headers["Last-Event-ID"] = str(last_event_id)
        with self.client.stream("GET", path, headers=headers, timeout=httpx.Timeout(60, read=30)) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            yield from parse_sse(response.iter_lines())

    def events(self, run_id: str, **kw: Any) -> list[dict[str, Any]]:
        """Every event of a run, read to ``[DONE]``."""
        out = []
        for frame in self.sse(f"/api/runs/{run_id}/events", **kw):
            if frame.data == "[DONE]":
                return out
            if frame.data is not None:
                out.append(frame.event)
        raise AssertionError("the stream ended without [DONE]")

    def stop(self, sig: int = signal.SIGINT, timeout: float = 60) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout=timeout)
