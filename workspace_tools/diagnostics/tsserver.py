"""A client of TypeScript's own server, ``tsserver``, kept warm for a session: it loads the project
once, and a check after an edit re-reads only the changed files (docs/diagnostics.md, measured in
benchmarks/diagnostics_server.py: ~0.1–0.5 s an edit against several seconds for a whole tsc run).

The protocol: one JSON request a line on stdin (``{"seq", "type": "request", "command",
"arguments"}``); on stdout, messages framed by a ``Content-Length`` header: responses (with the
request's ``request_seq``) and events, which are ignored (and mostly suppressed: :data:`FLAGS`).
A file is opened with its text (``updateOpen`` ``openFiles``), replaced whole after a change
(``changedFiles``), closed when it is gone, and asked about with ``syntacticDiagnosticsSync`` and
``semanticDiagnosticsSync`` (the answers ``geterr`` sends as events, as plain responses).

The process is read by a thread, not by an event loop: a server started in one event loop can be
used from another (a session's tools may be called from several), and closed from synchronous code
(``Tool.close``). Waiting for an answer polls, so a time budget (``anyio.move_on_after``) cancels it.
If cog exits without closing it, the server ends by itself: its stdin reaches end of file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: the flags that keep tsserver from reaching out: no typings downloaded (no network anyway), no events
FLAGS = ("--disableAutomaticTypingAcquisition", "--suppressDiagnosticEvents", "--noGetErrOnBackgroundUpdate", "--locale", "en")

#: the most one message may be (a big project's diagnostics); a longer one ends the server
MAX_MESSAGE = 64 * 1024 * 1024


class ServerGone(Exception):
    """The server exited (or was killed) before it answered."""


class Refused(Exception):
    """The server answered a request with a failure (``success: false``)."""


def _end(text: str) -> dict[str, int]:
    """The position just after ``text``, as tsserver counts (1-based lines, UTF-16 offsets)."""
    lines = text.split("\n")
    return {"line": len(lines), "offset": len(lines[-1].encode("utf-16-le")) // 2 + 1}


class TsServer:
    """One running ``tsserver`` (``argv``: the whole command line, a sandbox prefix first)."""

    def __init__(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], sandboxed: bool = False) -> None:
        self.proc = subprocess.Popen([*argv, *FLAGS], cwd=cwd, env=dict(env), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        self.pid = self.proc.pid
        #: started behind the sandbox prefix
        self.sandboxed = sandboxed
        self._seq = 0
        self._answers: dict[int, dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._gone = False
        #: the text the server has of each file it has open
        self.opened: dict[str, str] = {}
        threading.Thread(target=self._read, name=f"tsserver-{self.pid}", daemon=True).start()

    # --- the process ---------------------------------------------------------------------------

    def alive(self) -> bool:
        return not self._gone and self.proc.poll() is None

    def close(self) -> None:
        """End the server and whatever it started (its process group): SIGTERM, then SIGKILL."""
        if self.proc.poll() is None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                try:
                    os.killpg(self.pid, sig)
                except (ProcessLookupError, PermissionError):
                    break
                try:
                    self.proc.wait(timeout=2)
                    break
                except subprocess.TimeoutExpired:
                    continue
        else:  # the server is gone; what it started may not be
            try:
                os.killpg(self.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._gone = True
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()  # type: ignore[union-attr]
            except OSError:
                pass

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        try:
            while True:
                length = None
                while True:  # the headers, up to an empty line
                    line = out.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        if length is not None:
                            break
                        continue
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value.strip())
                if length > MAX_MESSAGE:
                    return
                body = out.read(length)
                if len(body) < length:
                    return
                try:
                    message = json.loads(body)
                except ValueError:
                    continue
                if isinstance(message, dict) and message.get("type") == "response" and isinstance(message.get("request_seq"), int):
                    with self._lock:
                        self._answers[message["request_seq"]] = message
        except (OSError, ValueError):
            return
        finally:
            self._gone = True

    # --- requests ------------------------------------------------------------------------------

    def send(self, command: str, arguments: dict[str, Any]) -> int:
        """Write one request; its sequence number."""
        if not self.alive():
            raise ServerGone(f"tsserver (pid {self.pid}) is not running")
        self._seq += 1
        line = json.dumps({"seq": self._seq, "type": "request", "command": command, "arguments": arguments}) + "\n"
        try:
            assert self.proc.stdin is not None
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (OSError, ValueError) as exc:
            self._gone = True
            raise ServerGone(f"tsserver (pid {self.pid}) stopped reading: {exc}") from None
        return self._seq

    async def answer(self, seq: int) -> Any:
        """The body of the response to request ``seq`` (cancel the waiting to give up)."""
        import anyio

        pause = 0.002
        while True:
            with self._lock:
                message = self._answers.pop(seq, None)
            if message is not None:
                if not message.get("success", False):
                    raise Refused(f"tsserver refused {message.get('command')}: {message.get('message', '')}"[:300])
                return message.get("body")
            if not self.alive():
                raise ServerGone(f"tsserver (pid {self.pid}) exited")
            await anyio.sleep(pause)
            pause = min(pause * 2, 0.02)

    async def request(self, command: str, arguments: dict[str, Any]) -> Any:
        return await self.answer(self.send(command, arguments))

    # --- diagnostics -----------------------------------------------------------------------------

    async def sync(self, files: Mapping[str, str | None], project_root: Path) -> None:
        """Give the server the files' text as it is now (None: the file is gone), in one request."""
        open_files, changed, closed = [], [], []
        for file, text in files.items():
            had = self.opened.get(file)
            if text is None:
                if had is not None:
                    closed.append(file)
                    del self.opened[file]
            elif had is None:
                open_files.append({"file": file, "fileContent": text, "projectRootPath": str(project_root)})
                self.opened[file] = text
            elif had != text:
                whole = {"start": {"line": 1, "offset": 1}, "end": _end(had), "newText": text}
                changed.append({"fileName": file, "textChanges": [whole]})
                self.opened[file] = text
        if open_files or changed or closed:
            await self.request("updateOpen", {"openFiles": open_files, "changedFiles": changed, "closedFiles": closed})

    async def diagnostics(self, files: Sequence[str], config: Path) -> dict[str, list[dict[str, Any]]]:
        """Per file (open ones): its syntax and type errors, as tsserver gives them; a file whose
        project is not ``config`` (a file tsc would not check) has none."""
        asked = []
        for file in files:  # all sent at once: the server answers in order while we wait
            asked.append((file, self.send("projectInfo", {"file": file, "needFileNameList": False}),
                          self.send("syntacticDiagnosticsSync", {"file": file}),
                          self.send("semanticDiagnosticsSync", {"file": file})))
        out: dict[str, list[dict[str, Any]]] = {}
        for file, info_seq, syntax_seq, types_seq in asked:
            info = await self.answer(info_seq)
            syntax = await self.answer(syntax_seq)
            types = await self.answer(types_seq)
            ours = isinstance(info, dict) and Path(str(info.get("configFileName", ""))) == config
            out[file] = [*(syntax or []), *(types or [])] if ours else []
        return out

