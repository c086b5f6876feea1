"""The words the text renderer draws, shared with the GitHub renderer: a call's row, its error
and progress lines, wrapped hints, a test report's failures, the instructions and compaction lines,
the model's reasoning."""

from __future__ import annotations

import json
import re
from typing import Any

from cogcli.wire.events import CompactionEvent, StartEvent, ToolUpdateEvent
from cogcli.render.details import ERROR_LINE_LIMIT, MAX_FAILURES_SHOWN, Failure, TestReport, first_line
from cogcli.render.summary import Call
from cogcli.shown.visible import visible

#: the narrowest width an error is wrapped to, whatever the terminal says
MIN_WRAP_WIDTH = 30


def row_text(call: Call) -> str:
    """``label  detail``, falling back to the tool's name; never the icon. One line: a newline in
    either (a model's command) is shown escaped, so it never draws a row that looks like cog's own."""
    label = visible(call.label, one_line=True)
    return f"{label}  {visible(call.detail, one_line=True)}" if call.detail else label


def error_text(call: Call) -> str:
    """``label  detail — CODE: message`` (without the ✗)."""
    result = call.result
    message = first_line(result.error or "", ERROR_LINE_LIMIT) if result is not None else ""
    code = result.error_code if result is not None else None
    return f"{row_text(call)} — {code}: {message}" if code else f"{row_text(call)} — {message}"


#: lines of a multi-line error message shown under its row
MAX_ERROR_LINES = 12


def error_lines(call: Call) -> list[str]:
    """The lines of a failed call's message after the first (the row shows the first)."""
    result = call.result
    if result is None or not result.error:
        return []
    rest = [line.rstrip() for line in result.error.strip().splitlines()[1:]]
    while rest and not rest[0].strip():
        rest.pop(0)
    if len(rest) > MAX_ERROR_LINES:
        rest = rest[:MAX_ERROR_LINES] + [f"… {len(rest) - MAX_ERROR_LINES} more lines"]
    return rest


def update_text(event: ToolUpdateEvent, call: Call) -> str:
    """What one progress update says: ``label  text``."""
    p = event.presentation
    label = p.label if p is not None and p.label else call.label
    if isinstance(event.content, str) and event.content.strip():
        text = first_line(event.content, 200)
    elif p is not None and p.detail:
        text = p.detail
    elif event.content is not None:
        text = first_line(json.dumps(event.content, ensure_ascii=False, separators=(",", ":")), 200)
    else:
        text = ""
    return f"{label}  {text}" if text else label


#: what wrapping keeps on one line: a word, or a span in parentheses or backticks (a command
#: such as ``(…/python -m pip install pytest)`` or `` `npm ci` ``) up to MAX_KEPT_SPAN characters
_ATOM = re.compile(r"(\s*)(\S*\([^()]*\)\S*|\S*`[^`]*`\S*|\S+)")
MAX_KEPT_SPAN = 200
#: a line longer than this (a minified file in an output tail) is left for the terminal to fold
MAX_WRAPPED = 20_000


def wrap_line(text: str, width: int | None, indent: str) -> list[str]:
    """An error or a hint as lines of at most ``width`` columns, continuation lines indented by
    ``indent``: never cut, no word broken, and a command in parentheses or backticks kept on one
    line (a path or a command wider than ``width`` gets a line of its own, whole, which a terminal
    folds and copies as one). Control characters come out escaped, as :func:`visible` writes
    them. Without a width (a pipe, a log) the line as it is."""
    text = visible(text.rstrip())
    if width is None or len(text) <= width or len(text) > MAX_WRAPPED:
        return [text]
    width = max(width, MIN_WRAP_WIDTH)
    atoms: list[tuple[str, str]] = []
    for m in _ATOM.finditer(text):
        space, word = m.group(1), m.group(2)
        if len(word) > MAX_KEPT_SPAN and " " in word:  # a long aside: words like any other
            first, *rest = word.split(" ")
            atoms += [(space, first), *((" ", w) for w in rest if w)]
        else:
            atoms.append((space, word))
    lines: list[str] = []
    current = ""
    for space, word in atoms:
        if current.strip() and len(current) + len(space) + len(word) > width:
            lines.append(current)
            current = indent + word
        else:
            current += space + word
    lines.append(current)
    return lines


def changes_view_lines(content: str, diff: str) -> list[str]:
    """What to draw of a view of many files' changes: what the model read of it (a line per file or
    folder, the notes) and, when the diff is not all in there, one closing line saying where it is."""
    lines = content.rstrip("\n").splitlines()
    if diff.strip() not in content:
        n = diff.count("\n") + (0 if diff.endswith("\n") else 1)
        lines.append(f"(the full diff, {n:,} line{'s' if n != 1 else ''}: --json, or cog tool git_diff path=… for a part)")
    return lines


def failure_lines(report: TestReport) -> list[str]:
    lines = []
    for f in report.failures[:MAX_FAILURES_SHOWN]:
        message = first_line(f.message)
        name = f"{f.name} at {where}" if (where := failure_place(f)) else f.name
        lines.append(f"FAILED {name} — {message}" if message else f"FAILED {name}")
    # counted from the run's total, not from the failures its details kept
    # (a report that lists none: its row's counts say it all)
    hidden = report.failures_total - min(len(report.failures), MAX_FAILURES_SHOWN)
    if hidden > 0 and lines:
        lines.append(f"… and {hidden} more")
    return lines


def failure_place(failure: Failure) -> str | None:
    """``tests/test_number.py:38``: where a failing test failed, as the details say (the reader the
    GitHub annotations use, :func:`cogcli.contract.details.read_test_report`); None without a line."""
    if failure.file and failure.line is not None:
        return f"{failure.file}:{failure.line}"
    return None


def _bytes(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KB"


def instructions_text(event: StartEvent) -> str:
    """``Instructions  AGENTS.md (1.2 KB) · pkg/AGENTS.md (310 B, 2.0 KB cut)``."""
    parts = []
    for f in event.instructions or []:
        cut = f", {_bytes(f.cut)} cut" if f.cut else ""
        parts.append(f"{f.path} left out: {f.left_out}" if f.left_out else f"{f.path} ({_bytes(f.size)}{cut})")
    return "Instructions  " + " · ".join(parts)


def compaction_text(event: CompactionEvent) -> str:
    """``· Context compacted: 12 results dropped, 9 messages summarized · 104,512 → 51,200 tokens of 128,000``."""
    what = []
    if event.dropped:
        what.append(f"{len(event.dropped)} result{'s' if len(event.dropped) != 1 else ''} dropped")
    if event.summarized_messages:
        what.append(f"{event.summarized_messages} messages summarized")
    window = f" of {event.context_window:,}" if event.context_window else ""
    why = " after a context-length error" if event.reason == "context-length-error" else ""
    return f"· Context compacted{why}: {', '.join(what) or 'nothing dropped'} · {event.tokens_before:,} → {event.tokens_after:,} tokens{window}"


#: the row a block of the model's reasoning is drawn under (dimmed, like its text)
THINKING_ROW = "thinking…"
REASONING_INDENT = "  "


def reasoning_lines(text: str) -> list[str]:
    """A block of the model's reasoning as the terminal draws it: a ``thinking…`` row, then its
    lines indented (the renderer dims them all and escapes control characters); nothing for a
    block with no readable text (an encrypted one)."""
    block = ReasoningLines()
    return block.feed(text) + block.end()


class ReasoningLines:
    """One block of the model's reasoning as it streams, folded into the lines the terminal prints
    (:func:`reasoning_lines`, a piece at a time): the ``thinking…`` row before the first, each line
    indented as soon as it is complete, the blank lines between paragraphs (none before the first
    or after the last). :attr:`partial` is the line still streaming (a terminal shows it in place)."""

    def __init__(self) -> None:
        self.partial = ""
        #: the thinking… row is out
        self.started = False
        self._blanks = 0

    def feed(self, delta: str) -> list[str]:
        """The lines ``delta`` completes."""
        *done, self.partial = (self.partial + delta).split("\n")
        return [line for text in done for line in self._complete(text)]

    def head(self) -> list[str]:
        """The ``thinking…`` row, once, before the partial line is first shown in place."""
        if self.started or not self.partial.strip():
            return []
        self.started = True
        return [THINKING_ROW]

    def end(self) -> list[str]:
        """The block ended: its last line, if any."""
        rest, self.partial = self.partial, ""
        return self._complete(rest)

    def _complete(self, text: str) -> list[str]:
        if not text.strip():
            self._blanks += self.started
            return []
        out = ([] if self.started else [THINKING_ROW]) + [""] * self._blanks
        self.started, self._blanks = True, 0
        return [*out, REASONING_INDENT + text.rstrip()]


def output_lines(value: Any) -> list[str]:
    """A run's structured output (``finish.output``) as indented JSON lines, control characters
    escaped (it is the model's text)."""
    import json

    from cogcli.shown.visible import visible

    return [visible(line) for line in json.dumps(value, indent=2, ensure_ascii=False).splitlines()]
