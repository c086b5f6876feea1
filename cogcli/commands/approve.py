"""How ``cog edit`` answers ``approval-required``: ``--approval ask|auto|stdin`` and ``--yes``.

- ``ask``: a prompt on the terminal (``/dev/tty``) for each call: ``y`` yes, ``n`` no, ``a`` always
  for this tool in this run.
- ``auto`` (``--yes``): every call runs; no approval is asked for, no ``approval-required`` event.
- ``stdin``: JSON lines ``{"type": "approval", "toolCallId": "…", "approved": true}`` read from
  stdin, so an editor or another program can drive ``cog edit --json`` (optional ``"reason"``:
  words the model reads when it refuses).
- default: ``ask`` on a terminal; off one ``auto`` when ``CI`` is set, otherwise ``refuse``:
  calls that need approval are refused and stderr says to pass ``--yes``.

Reading never blocks the run: the terminal and stdin are awaited with ``anyio.wait_readable``, so
Ctrl-C while a prompt waits still ends the run with its one ``finish``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

import anyio

from cogcli.approvals import Approve, Decision, Decisions, summarize
from cogcli.errors import ConfigError
from cogcli.events import Approval
from cogcli.shown import say, visible

log = logging.getLogger("cogcli")

MODES = ("ask", "auto", "stdin")

#: what the model reads when nobody could be asked
NO_ONE_TO_ASK = (
    "it needs approval and no one can give it in this run (no terminal, CI not set); "
    "the person can rerun cog with --yes to allow it"
)


def is_ci(env: Mapping[str, str]) -> bool:
    value = env.get("CI", "").strip().lower()
    return bool(value) and value not in ("0", "false", "no")


def default_mode(env: Mapping[str, str] | None = None) -> str:
    """``ask`` with a terminal to ask on, else ``auto`` under CI, else ``refuse``."""
    if sys.stdin.isatty():
        fd = _open_tty()
        if fd is not None:
            os.close(fd)
            return "ask"
    return "auto" if is_ci(os.environ if env is None else env) else "refuse"


def make_approver(mode: str | None) -> Approve | None:
    """The run's ``approve`` hook for ``mode`` (None: the default); None means approve everything.

    Raises :class:`ConfigError` for ``ask`` with no terminal to ask on."""
    mode = mode or default_mode()
    if mode == "auto":
        return None
    if mode == "refuse":
        return Refuser()
    if mode == "stdin":
        return StdinApprover(sys.stdin.fileno())
    if mode == "ask":
        fd = _open_tty()
        if fd is None:
            raise ConfigError("--approval ask needs a terminal to ask on; use --yes, or --approval stdin to answer from another program")
        return TerminalApprover(fd)
    raise ConfigError(f"--approval must be one of {', '.join(MODES)}, got {mode!r}")


def _open_tty() -> int | None:
    try:
        return os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None


class LineReader:
    """Lines from a file descriptor, awaited without blocking the event loop."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.buffer = b""
        self.eof = False

    async def readline(self) -> str | None:
        """The next line (without its newline), or None at end of input."""
        while b"\n" not in self.buffer and not self.eof:
            try:
                await anyio.wait_readable(self.fd)
            except PermissionError:  # a regular file or /dev/null: reading it does not block
                pass
            chunk = os.read(self.fd, 65536)
            if chunk:
                self.buffer += chunk
            else:
                self.eof = True
        if not self.buffer:
            return None
        line, _, self.buffer = self.buffer.partition(b"\n")
        return line.decode("utf-8", "replace")


class Refuser:
    """No one to ask: every call that needs approval is refused; stderr says so once."""

    def __init__(self) -> None:
        self.told = False

    async def __call__(self, approvals: list[Approval]) -> Decisions:
        if not self.told:
            self.told = True
            say(f"refused {summarize(approvals)}: it needs approval and there is no terminal to ask.")
            say("pass --yes (or --approval auto) to allow calls that write files or run code, "
                "or --approval stdin to answer from another program")
        return {a.tool_call_id: Decision(False, NO_ONE_TO_ASK) for a in approvals}


class StdinApprover:
    """Answers read from stdin as JSON lines; lines for calls not asked about yet are kept."""

    def __init__(self, fd: int) -> None:
        self.reader = LineReader(fd)
        self.answers: dict[str, Decision] = {}
        self.lines = 0

    async def __call__(self, approvals: list[Approval]) -> Decisions:
        wanted = [a.tool_call_id for a in approvals]
        while not all(w in self.answers for w in wanted):
            line = await self.reader.readline()
            if line is None:
                break
            self.lines += 1
            self._take(line)
        closed = Decision(False, "no answer came for it (stdin was closed)")
        return {w: self.answers.pop(w, closed) for w in wanted}

    def _take(self, line: str) -> None:
        if not line.strip():
            return
        try:
            data: Any = json.loads(line)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            log.warning("stdin line %d is not a JSON object; skipped", self.lines)
            return
        if data.get("type") != "approval":
            return  # other messages are for other readers (or a newer cog)
        call_id, approved = data.get("toolCallId"), data.get("approved")
        if not isinstance(call_id, str) or not isinstance(approved, bool):
            log.warning('stdin line %d: an approval needs "toolCallId" (a string) and "approved" (true or false); skipped', self.lines)
            return
        reason = data.get("reason")
        self.answers[call_id] = Decision(approved, reason if isinstance(reason, str) and reason and not approved else None)


class TerminalApprover:
    """Asks on the terminal, one call at a time: y (yes), n (no), a (always for this tool)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader = LineReader(fd)
        self.always: set[str] = set()

    async def __call__(self, approvals: list[Approval]) -> Decisions:
        decisions: dict[str, bool | Decision] = {}
        for a in approvals:
            if a.tool_name in self.always:
                decisions[a.tool_call_id] = True
                continue
            answer = await self._ask(a)
            if answer is None:  # the terminal went away
                decisions[a.tool_call_id] = Decision(False, "no answer came for it (the terminal was closed)")
            elif answer == "a":
                self.always.add(a.tool_name)
                decisions[a.tool_call_id] = True
            else:
                decisions[a.tool_call_id] = answer == "y"
        return decisions

    async def _ask(self, a: Approval) -> str | None:
        # the description, the arguments, even the tool's name come from the model (or an MCP
        # server): every control character shown escaped, so none redraws the question
        effects = visible(", ".join(a.side_effects or []), one_line=True)
        shown = f"\n  {visible(_short_arguments(a.arguments), one_line=True)}" if a.arguments else ""
        self._write(f"\ncog wants to: {visible(a.description, one_line=True)} ({effects}){shown}\n")
        while True:
            self._write(f"Allow? [y]es, [n]o, [a]lways for {visible(a.tool_name, one_line=True)} in this run: ")
            line = await self.reader.readline()
            if line is None:
                self._write("\n")
                return None
            answer = line.strip().lower()
            if answer in ("y", "yes", "n", "no", "a", "always"):
                return answer[0]
            self._write("Please answer y, n or a.\n")

    def _write(self, text: str) -> None:
        os.write(self.fd, text.encode("utf-8", "replace"))

    def close(self) -> None:
        os.close(self.fd)


def _short_arguments(arguments: Any, limit: int = 300) -> str:
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= limit else text[: limit - 1] + "…"
