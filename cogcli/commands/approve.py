"""How ``cog edit`` answers ``approval-required``: ``--approval ask|auto|stdin`` and ``--yes``.

- ``ask``: a question on the terminal (``/dev/tty``) for each call, showing what it would do (its
  preview: an edit's diff, a test run's command), answered with one key: ``y`` yes, ``n`` no,
  ``a`` always for this tool in this run, Enter alone no. An answered question is erased and
  leaves one line (``✓ approved Edit file · a.py``).
- ``auto`` (``--yes``): every call runs; no approval is asked for, no ``approval-required`` event.
- ``stdin``: JSON lines ``{"type": "approval", "toolCallId": "…", "approved": true}`` read from
  stdin (each ``approval-required`` line carries the calls' ``preview``), so an editor or another program can drive ``cog edit --json`` (optional ``"reason"``:
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

from cogcli.shown.approval import WRAP_INDENT, arguments_text, exact_lines, wrap_columns
from cogcli.gate.approval import Approve, Decision, Decisions, summarize
from cogcli.contract.errors import ConfigError
from cogcli.wire.events import Approval
from cogcli.shown.visible import say, visible

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


def quiet_approvals(renderer: Any, approve: Approve | None) -> None:
    """When ``approve`` asks on the terminal, its question (and the one line it leaves) is the
    terminal's record of each approval: a text renderer there skips its ``? … needs approval`` line."""
    if getattr(approve, "asks_on_terminal", False) and hasattr(renderer, "approvals_asked_here"):
        renderer.approvals_asked_here = True


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
    """No one to ask: every call that needs approval is refused; stderr says so once. It is
    ``final``: no later turn could be approved either, so the run ends after the first refusal
    instead of paying for more model turns that would be refused too."""

    final = True

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


#: diff lines shown in a question at most (fewer on a short terminal); the rest are counted
MAX_PREVIEW_LINES = 40
_GREEN, _RED, _CYAN, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[36m", "\x1b[0m"


class TerminalApprover:
    """Asks on the terminal, one call at a time, and takes one key: ``y`` yes, ``n`` no, ``a``
    always for this tool in this run, Enter alone no (other keys are ignored). The question shows
    what the call would do (its preview: an edit's diff, a test run's command; else its
    arguments); once answered it is erased and one line stays: ``✓ approved Edit file · a.py``."""

    #: the question is the terminal's record of the approval (a renderer on it need not print one)
    asks_on_terminal = True

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.reader = LineReader(fd)
        #: tools answered ``a``: asked no more (``cog chat`` shares one set over its session)
        self.always: set[str] = set()
        #: how long an ``a`` answer holds, as the question and its outcome say it
        self.scope = "in this run"
        term = os.environ.get("TERM", "")
        #: cursor movement to erase an answered question (not on a dumb terminal)
        self.erase = term != "dumb"
        self.color = self.erase and not os.environ.get("NO_COLOR")

    async def __call__(self, approvals: list[Approval]) -> Decisions:
        decisions: dict[str, bool | Decision] = {}
        for a in approvals:
            if a.tool_name in self.always:
                decisions[a.tool_call_id] = True
                self._write(self._outcome(a, True, f"always for {a.tool_name} {self.scope}") + "\n")
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
        # the description, the arguments, the preview, even the tool's name come from the model,
        # the workspace or an MCP server: every control character shown escaped (visible), so none
        # redraws the question; the preview's lines wrapped to the terminal's width (never cut), so
        # erasing it is exact and nothing of what is approved hides past the edge
        width, height = self._size()
        effects = visible(", ".join(a.side_effects or []), one_line=True)
        body = question_body(a, max_lines=max(3, min(MAX_PREVIEW_LINES, height - 4)), width=width - 1)
        whole = question_body(a, max_lines=None, width=width - 1)
        lines = [fit(f"cog wants to: {visible(a.description, one_line=True)} ({effects})", width - 1)]
        lines += self._painted(body)
        prompt = fit(f"Allow? [y]es, [n]o, [a]lways for {visible(a.tool_name, one_line=True)} {self.scope}"
                     f"{', [v]iew all' if len(whole) > len(body) else ''}: ", width - 1)
        answer = await self._key("".join(line + "\n" for line in lines) + prompt, view=len(whole) > len(body))
        erase = self.erase
        while answer == "v":  # all of it, scrolling past the screen: this question is not erased after
            erase = False
            self._write("\n" + "".join(line + "\n" for line in self._painted(whole)) + prompt.replace(", [v]iew all", ""))
            answer = await self._key("", view=False)
        if answer is not None and erase:  # up to the question's first line; everything below it goes
            self._write(f"\r\x1b[{len(lines)}A\x1b[J")
        else:
            self._write("\n")
        note = "the terminal was closed" if answer is None else f"always for {a.tool_name} {self.scope}" if answer == "a" else None
        self._write(self._outcome(a, answer in ("y", "a"), note) + "\n")
        return answer

    def _painted(self, body: list[str]) -> list[str]:
        """Body lines in their colours, a wrapped line's pieces in the colour of its start."""
        out, source = [], ""
        for line in body:
            if not line.startswith(WRAP_INDENT):
                source = line
            out.append(self._paint(line, source))
        return out

    async def _key(self, question: str, *, view: bool = False) -> str | None:
        """Show ``question`` and take ``y``, ``n`` or ``a`` from one key (Enter alone is ``n``);
        None when the terminal closed. The terminal is in cbreak mode meanwhile (no echo, no line
        editing; Ctrl-C still stops the run) and put back as it was however the wait ends."""
        import termios
        import tty

        try:
            saved = termios.tcgetattr(self.fd)
        except (termios.error, OSError):  # not a terminal after all: a line answers
            self._write(question)
            return await self._line_answer()
        try:
            termios.tcflush(self.fd, termios.TCIFLUSH)  # keys typed before the question was shown answer nothing
            tty.setcbreak(self.fd, termios.TCSANOW)
            self._write(question)
            while True:
                await anyio.wait_readable(self.fd)
                chunk = os.read(self.fd, 64)
                if not chunk:
                    return None
                key = answer_of(chunk, view=view)
                if key is not None:
                    return key
        except (termios.error, OSError):
            return None
        finally:
            try:
                termios.tcsetattr(self.fd, termios.TCSADRAIN, saved)
            except (termios.error, OSError):  # the terminal is gone
                pass

    async def _line_answer(self) -> str | None:
        while True:
            line = await self.reader.readline()
            if line is None:
                return None
            answer = line.strip().lower()
            if answer in ("", "y", "yes", "n", "no", "a", "always"):
                return answer[:1] or "n"

    def _outcome(self, a: Approval, approved: bool, note: str | None) -> str:
        """The one line an answered question leaves: ``✓ approved Edit file · a.py``."""
        mark, word, color = ("✓", "approved", _GREEN) if approved else ("✗", "denied", _RED)
        tail = f" ({visible(note, one_line=True)})" if note else ""
        line = fit(f"{mark} {word} {visible(a.description, one_line=True)}{tail}", self._size()[0] - 1)
        return f"{color}{mark}{_RESET}{line[1:]}" if self.color else line

    def _paint(self, line: str, source: str) -> str:
        """A diff line in its colour (added green, removed red, hunk header cyan), when colour is on."""
        if not self.color or not source.startswith(DIFF_INDENT):
            return line
        kind = source[len(DIFF_INDENT) : len(DIFF_INDENT) + 2]
        style = _GREEN if kind[:1] == "+" else _RED if kind[:1] == "-" else _CYAN if kind == "@@" else ""
        return f"{style}{line}{_RESET}" if style else line

    def _size(self) -> tuple[int, int]:
        """(columns, lines) of the terminal; 80 × 24 when it does not say (a size of 0)."""
        try:
            size = os.get_terminal_size(self.fd)
        except OSError:
            return 80, 24
        return (max(size.columns, 20) if size.columns else 80), (max(size.lines, 8) if size.lines else 24)

    def _write(self, text: str) -> None:
        os.write(self.fd, text.encode("utf-8", "replace"))

    def close(self) -> None:
        os.close(self.fd)


def answer_of(chunk: bytes, *, view: bool = False) -> str | None:
    """What one read from the terminal in cbreak mode answers: a key ``y``/``n``/``a`` (any case),
    alone or with the Enter a hand used to the old question typed after it; Enter alone ``n``;
    ``v`` (view all of a question taller than the terminal) when ``view``;
    None for anything else — another key, an escape sequence (an arrow's ``ESC [ A`` holds an
    ``A``) or pasted text (``yes``), which is never taken as an answer."""
    key = chunk.rstrip(b"\r\n")
    if not key:
        return "n" if chunk else None
    if len(key) == 1 and key.lower() in ((b"y", b"n", b"a", b"v") if view else (b"y", b"n", b"a")):
        return key.decode().lower()
    return None


#: what starts a line of a diff in a question (and tells it from the lines around it)
DIFF_INDENT = "  │ "


def _without_headers(lines: list[str]) -> list[str]:
    """A one-file diff's lines from its first hunk on (``diff --git``, ``---``, ``+++``, mode lines
    left out: the question names the file), or from ``Binary files … differ``; a diff without
    either (a new empty file) keeps all but its ``diff --git`` line."""
    start = next((i for i, line in enumerate(lines) if line.startswith(("@@", "Binary files "))), None)
    if start is None:  # no hunk: a new empty file says so in its header ("new file mode 100644")
        return [line for line in lines if not line.startswith("diff --git ")]
    return lines[start:]


def question_lines(a: Approval) -> tuple[list[str], str]:
    """The lines under ``cog wants to: …``, whole (:mod:`cogcli.shown.approval`: split on ``\\n``
    only, drawn exactly, not yet wrapped), and what they are (``diff``, ``command``, ``arguments``):
    the call's preview when it has one (an edit's diff, a command), else all its arguments."""
    preview = a.preview or {}
    command, diff = preview.get("command"), preview.get("diff")
    if isinstance(command, str):
        return [f"  $ {line}" for line in exact_lines(command)], "command"
    if isinstance(diff, str):
        shown = _without_headers(diff.removesuffix("\n").split("\n") if diff else [])
        if not shown:
            return ["  (no change: the file already holds exactly this)"], "diff"
        lines = []
        added, removed = preview.get("added"), preview.get("removed")
        if isinstance(added, int) and isinstance(removed, int):
            lines.append(f"  {visible(str(preview.get('path') or ''), exact=True)}  +{added} −{removed}")
        lines += [DIFF_INDENT + visible(line, exact=True).expandtabs(4) for line in shown]
        return lines, "diff"
    if a.arguments:
        return [f"  {line}" for line in exact_lines(arguments_text(a.arguments))], "arguments"
    return [], "arguments"


def question_body(a: Approval, *, max_lines: int | None, width: int | None = None) -> list[str]:
    """:func:`question_lines` as drawn: each wrapped to ``width`` columns (never cut), at most
    ``max_lines`` of them (None: all), then a line saying plainly how many are not shown."""
    lines, kind = question_lines(a)
    drawn = [piece for line in lines for piece in (wrap_columns(line, width) if width else [line])]
    if max_lines is None or len(drawn) <= max_lines:
        return drawn
    left = len(drawn) - max_lines + 1
    what = {"diff": "of the diff", "command": "of the command", "arguments": "of the arguments"}[kind]
    return drawn[: max_lines - 1] + [f"  … {left} more line{'s' if left != 1 else ''} {what} not shown: press v to view all"]


def fit(text: str, width: int) -> str:
    """``text`` (no control characters: escaped by :func:`visible`) cut to ``width`` terminal
    columns, ``…`` marking the cut: a line that never wraps, so an answered question is erased
    exactly (the renderer's :func:`~cogcli.render.text.cut_to`, imported here, not at start-up)."""
    from cogcli.render.live_line import cut_to

    return cut_to(text, width)



