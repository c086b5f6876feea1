"""The plain-text renderer: one row per call, live progress, details in a block of their own.

It reads wire events only (``cogcli.wire.events``), so one code path draws a live run, ``cog render``
of a saved ``--json`` stream and ``cog thread show``::

    I'll look at the code first.
    Read file  calc/ops.py
      … Run tests  tests/test_ops.py::test_add failed
    Run tests  1 failed, 2 passed
        FAILED tests/test_ops.py::test_add at tests/test_ops.py:5 — assert -1 == 5
    ✗ Edit file  calc/ops.py — EDIT_NO_MATCH: old_text not found in calc/ops.py

    Done · 5 steps · 1 file changed (+1 -1) · 3 tests passed · 5,392 tokens

The model's reasoning (``--reasoning``) is drawn dimmed as it streams: a ``thinking…`` row, then each
line indented once complete; on a terminal the line still streaming shows in place (10 redraws a second).

On a terminal a running call's row shows its latest update in place (at most 10 redraws a
second) — a test run its count, its bar and the test that just ended,
``… Run tests  all · 248/2459 · 1 failed · 247 passed  ██░░░░ · tests/test_x.py::test_y`` —;
anywhere else (a CI log, a pipe) each update is its own indented line so the log reads top to
bottom. Colour only on a terminal, and never with ``NO_COLOR`` set. The last line says how the run
ended, in the word its exit code means (:meth:`RunSummary.outcome_word`): ``Done``, ``Failed``,
``Denied`` or ``Aborted``.

What is cut and what is not, per kind of line: the live row and progress lines are shortened
(one line each, the terminal's width in place); a failing test's line shows its message's first
160 characters (the whole report is in ``--json``); an error, the rest of its message and a hint
are never cut: on a terminal they are wrapped to its width (``COLUMNS`` first), with the
continuation lines indented, and a word or a command in parentheses or backticks longer than
that keeps a line of its own, whole; off a terminal each is one line. Rows are printed whole.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable
from typing import TextIO

from cogcli.wire.events import (
    HookEvent,
    ApprovalRequiredEvent,
    BaseEvent,
    CompactionEvent,
    AnswerRejectedEvent,
    ErrorEvent,
    FinishEvent,
    ReasoningDeltaEvent,
    ReasoningEndEvent,
    StartEvent,
    TextEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
)
from cogcli.shown.approval import columns
from cogcli.contract.output import content_text
from cogcli.render.details import (
    TestProgress,
    changes_view_diff,
    diff_text,
    environment_note,
    first_line,
    read_output_lines,
    read_test_progress,
    read_test_report,
    run_notes,
    run_outcome,
    sandbox_note,
)
from cogcli.render.diagnostics_lines import DiagnosticsLines
from cogcli.render.hook_line import hook_text
from cogcli.render.live_output import OUTPUT_PREFIX, OutputTails, job_tail, live_block
from cogcli.render.live_line import background_tail, cut_to, running_tests_line
from cogcli.render.summary import Call, RunSummary
from cogcli.render.words import (
    changes_view_lines,
    compaction_text,
    error_lines,
    error_text,
    failure_lines,
    instructions_text,
    output_lines,
    REASONING_INDENT,
    ReasoningLines,
    row_text,
    update_text,
    wrap_line,
)
from cogcli.shown.visible import showing_live_line, visible

#: seconds between two in-place redraws of a running call's row (≤ 10 a second)
REDRAW_INTERVAL = 0.1
DETAIL_INDENT = "    "
UPDATE_PREFIX = "  … "

_RESET = "\x1b[0m"
_STYLES = {"bold": "\x1b[1m", "dim": "\x1b[2m", "red": "\x1b[31m", "green": "\x1b[32m", "cyan": "\x1b[36m"}
#: the only control sequences written as they are (colours, on a terminal): see :func:`visible`
_OWN_CODES = (_RESET, *_STYLES.values())


def wants_color(stream: TextIO) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (https://no-color.org)."""
    return is_tty(stream) and not os.environ.get("NO_COLOR")


def is_tty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class TextRenderer:
    """Feed it wire events with :meth:`handle`; call :meth:`close` at the end."""

    def __init__(
        self,
        out: TextIO,
        *,
        tty: bool | None = None,
        color: bool | None = None,
        width: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        show_content: bool = False,
    ) -> None:
        self.out = out
        #: also print what the model reads of a result that has no diff or test report to draw
        #: (``cog tool read_file …`` shows the file; a run shows only rows)
        self.show_content = show_content
        self.tty = is_tty(out) if tty is None else tty
        self.color = wants_color(out) if color is None else color
        self.width = width
        self.clock = clock
        self.summary = RunSummary()
        #: the person is asked on the terminal (``cog edit --approval ask``): when ``out`` is that
        #: terminal, the question shows each call and leaves its own line, so no ``? … needs
        #: approval`` line is printed
        self.approvals_asked_here = False
        self.broken = False  # the reader of ``out`` went away: nothing more is written
        self._printed_texts, self._texts_walked = set[str](), 0  # summary.text_ids before _texts_walked: printed
        self._notes_said: set[str] = set()  # a note the same for every test run (cog's Python ran them): once
        self._diagnostics = DiagnosticsLines()  # a change's new problems; a checker that could not run, once
        self._lock = threading.RLock()
        self._live: str | None = None  # what the in-place row shows now (a command's: lines below it too)
        self._tails = OutputTails()
        #: the head and counts of each test run that has counted on this terminal (its live line keeps them)
        self._counting: dict[str, tuple[str, TestProgress]] = {}
        self._pending: tuple[str, TestProgress | None, str | None] | None = None  # a redraw held back by the throttle
        self._last_draw = float("-inf")
        self._timer: threading.Timer | None = None
        #: the model's reasoning blocks still streaming: each line drawn, dimmed, once complete
        self._reasoning: dict[str, ReasoningLines] = {}
        self._held_thought: str | None = None  # a reasoning line's redraw held back by the throttle

    # --- events --------------------------------------------------------------------------

    def handle(self, event: BaseEvent) -> None:
        with self._lock:
            self.summary.add(event)
            if isinstance(event, TextEndEvent):
                self._print_text(event.id)
            elif isinstance(event, ReasoningDeltaEvent):
                self._print_texts()
                block = self._reasoning.setdefault(event.id, ReasoningLines())
                for line in block.feed(event.delta) + (block.head() if self.tty else []):
                    self._line(self._style(line, "dim"))
                if self.tty and block.partial.strip():
                    self._reasoning_live(block.partial)
            elif isinstance(event, ReasoningEndEvent):
                self._print_texts()
                for line in self._reasoning.pop(event.id, ReasoningLines()).end():
                    self._line(self._style(line, "dim"))
            elif isinstance(event, ToolCallStartEvent):
                self._print_texts()
            elif isinstance(event, ToolUpdateEvent):
                if event.content is not None or event.details is not None or event.presentation is not None:
                    call = self.summary.call(event.tool_call_id)
                    progress = read_test_progress(event.details) if self.tty else None
                    output = read_output_lines(event.details, event.content)
                    last = first_line(event.content, 200) if isinstance(event.content, str) else None
                    if output is not None:  # a command's output: the last lines under its row (live_output)
                        self._output(event, call, output)
                    elif progress is not None:  # on a terminal a test run's line counts, with a bar
                        self._counting[event.tool_call_id] = (self._test_head(event, call), progress)
                        self._progress(*self._counting[event.tool_call_id], last)
                    elif event.tool_call_id in self._counting and last:
                        # a line of the runner's own output (npm's): the count and bar stay, it shows after them
                        self._progress(*self._counting[event.tool_call_id], last)
                    else:
                        self._progress(update_text(event, call))
            elif isinstance(event, ToolResultEvent):
                self._tails.end(event.tool_call_id or event.id)
                self._result(self.summary.call(event.tool_call_id or event.id))
            elif isinstance(event, ErrorEvent):
                self._print_texts()
                label = f"{event.code}: {event.message}" if event.code else event.message
                self._error("✗ " + label, lambda first: self._style("✗ ", "red") + first[2:])
            elif isinstance(event, AnswerRejectedEvent):  # the answer above did not match --output-schema: it went back
                self._print_texts()
                self._error(f"✗ not valid against the output schema: {event.problem}; sent back to the model "
                            f"({event.tries_left} {'try' if event.tries_left == 1 else 'tries'} left)",
                            lambda first: self._style("✗ ", "red") + first[2:])
            elif isinstance(event, StartEvent) and event.instructions:  # which AGENTS.md the model got
                self._line(self._style(instructions_text(event), "dim"))
            elif isinstance(event, CompactionEvent):  # one quiet line
                self._print_texts()
                self._line(self._style(compaction_text(event), "dim"))
            elif isinstance(event, HookEvent) and (said := hook_text(event)) is not None:
                self._print_texts()
                self._line(self._style(said, "dim"))
            elif isinstance(event, ApprovalRequiredEvent):
                self._print_texts()
                for a in event.approvals if not (self.approvals_asked_here and self.tty) else ():
                    self._line(f"? {visible(a.description or a.tool_name, one_line=True)} — needs approval")
            elif isinstance(event, FinishEvent):
                self._print_texts()
                if event.output is not None:  # the answer valid against --output-schema, as JSON
                    self._line("")
                    self._line(self._style("Output:", "bold"))
                    for line in output_lines(event.output):
                        self._line(line)
                self._line("")
                self._line(self._style(self.summary.line(), "bold"))

    def close(self) -> None:
        """Print any text that never got its ``text-end`` and clear a live row."""
        with self._lock:
            self._print_texts()
            self._clear_live()
            if self._timer is not None:
                self._timer.cancel()

    # --- pieces --------------------------------------------------------------------------

    def _print_text(self, text_id: str) -> None:
        if text_id in self._printed_texts:
            return
        self._printed_texts.add(text_id)
        text = self.summary.texts.get(text_id, "").strip("\n")
        if text.strip():
            for line in text.splitlines():
                self._line(line.rstrip())

    def _print_texts(self) -> None:  # those not printed yet: redrawing 2,000 rows must not walk every text each row
        for text_id in self.summary.text_ids[self._texts_walked :]:
            self._print_text(text_id)
        self._texts_walked = len(self.summary.text_ids)

    def _result(self, call: Call) -> None:
        self._pending = None
        result = call.result
        assert result is not None
        if result.error is not None:
            self._error("✗ " + error_text(call), lambda first: self._style("✗ ", "red") + self._row_words(first[2:], call))
            for line in error_lines(call):
                for part in self._wrap(DETAIL_INDENT + line, DETAIL_INDENT + "  "):
                    self._line(part)
        else:
            self._line(self._row_words(row_text(call), call))
        diff = diff_text(result.details)
        many = changes_view_diff(result.details)
        if many is not None:
            # many files' changes (every line of every untracked file): what the model read of them
            for line in changes_view_lines(content_text(result.result) if result.result is not None else "", many):
                self._line(DETAIL_INDENT + self._diff_style(line) if line else "")
        elif diff is not None:
            for line in diff.rstrip("\n").split("\n"):  # only \n ends a line of a diff
                self._line(DETAIL_INDENT + self._diff_style(line))
        for text, style in self._diagnostics.lines(result.details, failed=result.error is not None):  # under its row
            self._line(DETAIL_INDENT + (self._style(text, style) if style else text))
        report = read_test_report(result.details)
        note = sandbox_note(result.details)
        # failures that look like the sandbox; and when the run gave no verdict on the tests (an error,
        # none ran), what it rests on (cog's own Python ran them, a package came from an installed copy …)
        notes = run_notes(result.details) if run_outcome(result.details)[0] in ("error", "no-tests") else []
        content = self.show_content and result.error is None and diff is None and report is None and result.result is not None
        if content:  # what the content below says already is not said twice (cog tool run_tests)
            notes = [n for n in notes if n not in content_text(result.result)]
        env = environment_note(result.details)  # whatever the outcome; the same one said once a run
        first = [n for n in (note, None if env in self._notes_said else env) if n is not None]
        self._notes_said.add(env or "")
        for text in first + [n for n in notes if n not in first]:
            for part in self._wrap(DETAIL_INDENT + text, DETAIL_INDENT):
                words = part.lstrip(" ")
                self._line(part[: len(part) - len(words)] + self._style(words, "bold"))
        if report is not None:
            for line in failure_lines(report):
                self._line(DETAIL_INDENT + self._style(line, "red" if line.startswith("FAILED") else "dim"))
        if content:
            for line in content_text(result.result).rstrip("\n").splitlines():
                self._line(DETAIL_INDENT + line)
        for line in () if content else job_tail(result.details):  # a background command's newest lines
            self._line(self._style(line, "dim"))

    def _output(self, event: ToolUpdateEvent, call: Call, lines: list[str]) -> None:
        if not self.tty:  # a log: each line once, in order
            for line in lines:
                self._line(self._style(OUTPUT_PREFIX + line, "dim"))
            return
        self._progress(live_block(self._test_head(event, call), self._tails.add(call.id, lines)))

    def _test_head(self, event: ToolUpdateEvent, call: Call) -> str:
        """The words a running test run's live line starts with: the call's own label and detail
        (``Run tests  all``, from its presentation or its approval), not the test that just ended."""
        own = call.best_presentation is not None or call.described is not None
        label = call.label if own or event.presentation is None or not event.presentation.label else event.presentation.label
        return f"{label}  {call.detail}" if own and call.detail else label

    def _row_words(self, text: str, call: Call) -> str:
        label = visible(call.label, one_line=True)
        if not self.color or not text.startswith(label):
            return text
        return self._style(label, "bold") + text[len(label) :]

    def _error(self, text: str, first_style: Callable[[str], str]) -> None:
        """An error line, wrapped (never cut); ``first_style`` colours its first line."""
        lines = [part for i, line in enumerate(text.splitlines() or [""]) for part in self._wrap(line, DETAIL_INDENT if i == 0 else DETAIL_INDENT + "  ")]
        self._line(first_style(lines[0]))
        for line in lines[1:]:
            self._line(line)

    def _wrap(self, text: str, indent: str) -> list[str]:
        return wrap_line(text, self._wrap_width(), indent)

    def _wrap_width(self) -> int | None:
        """The width errors and hints are wrapped to: the terminal's (``COLUMNS`` first, as
        :func:`shutil.get_terminal_size` reads it). Off a terminal (a log, a pipe) none: each
        stays one line, whole, for the viewer to fold."""
        if self.width:
            return self.width
        return shutil.get_terminal_size((100, 24)).columns if self.tty else None

    def _diff_style(self, line: str) -> str:
        if line.startswith(("+++", "---")):
            return self._style(line, "bold")
        if line.startswith("+"):
            return self._style(line, "green")
        if line.startswith("-"):
            return self._style(line, "red")
        if line.startswith("@@"):
            return self._style(line, "cyan")
        return line

    def _style(self, text: str, style: str) -> str:
        return f"{_STYLES[style]}{text}{_RESET}" if self.color and text else text

    # --- output --------------------------------------------------------------------------

    def _line(self, text: str) -> None:
        self._clear_live()
        self._write(text + "\n")

    def _write(self, text: str, *, raw: bool = False) -> None:
        """Write and flush; once the reader is gone (``cog edit | head``) stop writing quietly.
        Control characters from files, models and tools are written escaped (``\\x1b``); only
        cog's own colours get through, and only when colour is on (``raw``: cog's own cursor codes)."""
        if self.broken:
            return
        if not raw:
            text = visible(text, _OWN_CODES if self.color else ())
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            self.broken = True

    def _progress(self, text: str, tests: TestProgress | None = None, last: str | None = None) -> None:
        """A running call's latest update: on a terminal its live line (``tests``: a test run's
        counts and bar), redrawn in place at most 10 times a second; elsewhere a line of its own."""
        if not self.tty:
            self._line(self._style(UPDATE_PREFIX + text, "dim"))
            return
        now = self.clock()
        if now - self._last_draw < REDRAW_INTERVAL:
            self._pending = (text, tests, last)
            if self._timer is None:
                self._timer = threading.Timer(REDRAW_INTERVAL - (now - self._last_draw), self._draw_pending)
                self._timer.daemon = True
                self._timer.start()
            return
        self._draw(text, tests, last, now)

    def _reasoning_live(self, partial: str) -> None:
        """The reasoning line still streaming, in place: indented, dimmed, its latest words (the
        start gives way when it is wider than the terminal); at most 10 redraws a second."""
        now = self.clock()
        if self._live is not None and now - self._last_draw < REDRAW_INTERVAL:
            self._held_thought = partial
            if self._timer is None:
                self._timer = threading.Timer(REDRAW_INTERVAL - (now - self._last_draw), self._draw_pending)
                self._timer.daemon = True
                self._timer.start()
            return
        self._held_thought = None
        room = max(10, (self.width or shutil.get_terminal_size((100, 24)).columns) - 1) - len(REASONING_INDENT)
        words = visible(partial.strip())
        if columns(words) > room:  # its latest words, after a …
            words = words[-(room - 1):]
            while columns(words) > room - 1:  # wide characters take two columns
                words = words[1:]
            words = "…" + words
        shown = REASONING_INDENT + words
        self._erase()
        self._write(self._style(shown, "dim"))
        self._live, self._last_draw = shown, now
        showing_live_line(self._clear_live)

    def _draw_pending(self) -> None:
        with self._lock:
            self._timer = None
            if self._held_thought is not None:
                self._reasoning_live(self._held_thought)
            elif self._pending is not None:
                self._draw(*self._pending, self.clock())

    def _draw(self, text: str, tests: TestProgress | None, last: str | None, now: float) -> None:
        """Redraw the live line (ending with the background commands running): escaped, then cut to one terminal line by columns."""
        self._pending = None
        self._last_draw = now
        width = max(10, (self.width or shutil.get_terminal_size((100, 24)).columns) - 1)
        room = width - len(UPDATE_PREFIX) - columns(tail := background_tail(self.summary.jobs_running) if width > 40 else "")
        if tests is None and "\n" in text and self.color:  # a command's row and its last lines: each cut to a line
            head, *below = text.split("\n")
            shown = "\n".join([UPDATE_PREFIX + cut_to(visible(head), room) + tail, *(cut_to(visible(line), width) for line in below)])
        else:
            words = visible(text.split("\n")[0])
            shown = UPDATE_PREFIX + (running_tests_line(words, tests, room, last=last) if tests is not None else cut_to(words, room)) + tail
        self._erase()
        self._write(self._style(shown, "dim"))
        self._live = shown
        showing_live_line(self._clear_live)  # a message on the terminal meanwhile starts on a line of its own

    def _erase(self) -> None:
        if self._live is None:
            return
        # with colour: carriage return + "erase line" (and the lines above it); without (NO_COLOR): overwrite with spaces
        up = self._live.count("\n")
        self._write("\r\x1b[2K" + "\x1b[1A\x1b[2K" * up if self.color else "\r" + " " * columns(self._live) + "\r", raw=True)
        self._live = None
        showing_live_line(None)

    def _clear_live(self) -> None:
        self._held_thought = None  # a line printed: the reasoning line held back is gone with the live one
        if self._live is not None:
            self._erase()
