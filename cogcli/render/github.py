"""GitHub Actions output: a log group per call, ``::error`` annotations, a job summary.

- each call is a collapsible ``::group::label  detail`` holding its progress, row and details;
- failing tests of the last test run and edits that failed (and were not redone) become
  ``::error file=…,line=…::`` annotations on the pull request;
- with ``$GITHUB_STEP_SUMMARY`` set, a Markdown summary of the run is appended to that file.

A run ends them with its ``finish`` event; a stream without one (``cog tool NAME``: calls, no run)
ends them at :meth:`GithubRenderer.close`, so ``cog tool run_tests --format github`` annotates the
same failures as ``cog edit --format github``.

What the model and the tools wrote never reads as a workflow command. The runner trims a line's
leading whitespace before it looks for ``::``, and its legacy parser finds ``##[`` anywhere in a
line; so every run of lines that are not cog's own commands goes between ``::stop-commands::TOKEN``
and ``::TOKEN::`` (a fresh random token each time, made after the text it guards was written, so
that text cannot know it), and in every line cog writes — its commands' data included — a ``##[`` is
written ``##\\[`` and a plain line that would start with ``::`` after whitespace gets a ``\\``
before it. Command data and properties are escaped as GitHub documents (``%``, ``\\r``, ``\\n``;
in properties also ``:`` and ``,``), and control characters are shown as escapes
(:func:`~cogcli.shown.visible.visible`), so no text can end a line early.

Workflow command syntax: https://docs.github.com/actions/reference/workflow-commands-for-github-actions
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import TextIO

from cogcli.wire.events import (
    BaseEvent,
    CompactionEvent,
    HookEvent,
    ErrorEvent,
    FinishEvent,
    StartEvent,
    TextEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
)
from cogcli.contract.output import content_text
from cogcli.render.details import changes_view_diff, diff_text, file_touched, first_line, read_test_report
from cogcli.render.summary import Call, RunSummary
from cogcli.shown.visible import visible
from cogcli.render.text import DETAIL_INDENT, UPDATE_PREFIX
from cogcli.render.words import changes_view_lines, error_lines, error_text, failure_lines, row_text
from cogcli.render.hook_line import hook_text
from cogcli.render.words import compaction_text, instructions_text, output_lines, update_text


#: what the runner's legacy parser takes for a command anywhere in a line
_LEGACY = "##["
#: a line the runner reads as a command: ``::`` after any leading whitespace (.NET's ``TrimStart``)
_STARTS_COMMAND = re.compile(r"\A(\s*)(?=::)")


def escape_data(text: str) -> str:
    """A command's message as GitHub documents it (``%``, ``\\r``, ``\\n``), and no ``##[`` in it."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A").replace(_LEGACY, "##\\[")


def escape_property(text: str) -> str:
    """A command's property value: its data escaped, and ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(name: str, message: str, **properties: object) -> str:
    """``::name key=value,…::message`` with both parts escaped."""
    props = ",".join(f"{k}={escape_property(str(v))}" for k, v in properties.items() if v is not None)
    return f"::{name}{' ' + props if props else ''}::{escape_data(message)}"


def plain(line: str) -> str:
    """One line of text that is no workflow command (no ``\\n`` or ``\\r`` in it: :func:`visible`
    escaped them): a ``##[`` written ``##\\[``, a ``::`` after leading whitespace preceded by ``\\``."""
    return _STARTS_COMMAND.sub(r"\1\\", line.replace(_LEGACY, "##\\["), count=1)


class GithubRenderer:
    def __init__(self, out: TextIO, *, step_summary: str | Path | None = None, title: str | None = None) -> None:
        self.out = out
        self.step_summary = Path(step_summary) if step_summary else None
        #: the job summary's heading; by default ``cog edit`` for a run, ``cog tool NAME`` for a call
        self._title = title
        self.summary = RunSummary()
        self.broken = False
        self._open: str | None = None  # the call whose group is open
        self._printed_texts, self._texts_walked = set[str](), 0  # summary.text_ids before _texts_walked: printed
        self._run = False  # a run's start event came: this is a run, not a call by hand
        self._concluded = False  # annotations and job summary written
        #: the token that resumes commands, while the runner's commands are stopped (None: they are not)
        self._stopped: str | None = None

    @property
    def title(self) -> str:
        if self._title is not None:
            return self._title
        if self._run or self.summary.finish is not None or not self.summary.calls:
            return "cog edit"
        return "cog tool " + next(iter(self.summary.calls.values())).tool_name

    def handle(self, event: BaseEvent) -> None:
        self.summary.add(event)
        if isinstance(event, StartEvent):
            self._run = True
        if isinstance(event, TextEndEvent):
            self._print_text(event.id)
        elif isinstance(event, ToolCallStartEvent):
            self._print_texts()
        elif isinstance(event, ToolUpdateEvent):
            if event.content is not None or event.details is not None or event.presentation is not None:
                call = self.summary.call(event.tool_call_id)
                if self._open != call.id:
                    # the final label and detail come with the result; open with what is known now
                    known = call.presentation is not None or event.presentation is None
                    self._group(call, row_text(call) if known else event.presentation.label)
                self._line(UPDATE_PREFIX + update_text(event, call))
        elif isinstance(event, ToolResultEvent):
            self._result(self.summary.call(event.tool_call_id or event.id))
        elif isinstance(event, StartEvent) and event.instructions:
            self._line(instructions_text(event))
        elif isinstance(event, CompactionEvent):
            self._print_texts()
            self._end_group()
            self._line(compaction_text(event))
        elif isinstance(event, HookEvent) and (said := hook_text(event)) is not None:
            self._line(said)
        elif isinstance(event, ErrorEvent):
            self._end_group()
            self._command(command("error", f"{event.code}: {event.message}" if event.code else event.message))
        elif isinstance(event, FinishEvent):
            self._finish()

    def close(self) -> None:
        self._print_texts()
        self._end_group()
        if not self._concluded and self.summary.finish is None and self.summary.calls:
            self._finish()  # calls without a run (``cog tool``): the same annotations and job summary
        self._resume()  # the rest of the job's step may use commands again

    # --- pieces --------------------------------------------------------------------------

    def _result(self, call: Call) -> None:
        result = call.result
        assert result is not None
        row = "✗ " + error_text(call) if result.error is not None else row_text(call)
        if self._open != call.id:
            self._group(call, row)
        else:
            self._line(row)
        for line in error_lines(call):
            self._line(DETAIL_INDENT + line)
        diff = diff_text(result.details)
        many = changes_view_diff(result.details)
        if many is not None:  # many files' changes: what the model read of them, not every line
            for line in changes_view_lines(content_text(result.result) if result.result is not None else "", many):
                self._line(DETAIL_INDENT + line if line else "")
        elif diff is not None:
            for line in diff.rstrip("\n").splitlines():
                self._line(DETAIL_INDENT + line)
        report = read_test_report(result.details)
        if report is not None:
            for line in failure_lines(report):
                self._line(DETAIL_INDENT + line)
        self._end_group()

    def _finish(self) -> None:
        self._concluded = True
        self._print_texts()
        self._end_group()
        for line in self._annotations():
            self._command(line)
        if self._failed():
            self._command(command("error", f"{self.title}: {self.headline()}", title="cog"))
        self._resume()
        self._write(plain(visible(self.headline(), one_line=True)))  # the last line, as in every format; no command
        if self.step_summary is not None:
            with self.step_summary.open("a", encoding="utf-8") as f:
                f.write(visible(self.markdown()))

    def headline(self) -> str:
        """A run's status line; for calls without a run, their rows (``Run tests  all · 1 failed, 2 passed``)."""
        if self._run or self.summary.finish is not None:
            return self.summary.line()
        rows = ["✗ " + error_text(c) if c.result.error is not None else row_text(c) for c in self.summary.calls.values() if c.result is not None]
        return " · ".join(rows) or self.summary.line()

    def _failed(self) -> bool:
        """A run whose exit code is not 0 (it did not complete, or its last test run failed), or a
        call by hand that failed (its failing tests are annotated)."""
        if self._run or self.summary.finish is not None:
            return self.summary.finish is not None and self.summary.exit_code() != 0
        return any(c.result is not None and c.result.error is not None for c in self.summary.calls.values())

    def _annotations(self) -> list[str]:
        lines = []
        # per path, the last call that changed it or failed to: read from the result's shape and
        # error code, never the tool's name
        last_edit: dict[str, Call] = {}
        for call in self.summary.calls.values():
            result = call.result
            if result is None:
                continue
            path = file_touched(call.arguments, result.details, failed=result.error is not None, error_code=result.error_code)
            if path is not None:
                last_edit[path] = call
        for path, call in last_edit.items():
            if call.result is not None and call.result.error is not None:
                lines.append(command("error", error_text(call), file=path, title=f"cog: {call.label} failed"))
        report = self.summary.tests
        if report is not None:
            for f in report.failures:
                lines.append(command("error", first_line(f.message) or "failed", file=f.file, line=f.line, title=f.name))
        return lines

    def markdown(self) -> str:
        """The job summary: status line, files changed, failing tests, the assistant's final text."""
        s = self.summary
        out = [f"### {self.title}", "", self.headline(), ""]
        files = s.file_stats()
        if files:
            out += ["| File | + | - |", "|---|---:|---:|"]
            out += [f"| `{path}` | {f.added} | {f.removed} |" for path, f in files.items()]
            out.append("")
        if s.tests is not None and s.tests.failures:
            out.append("**Failing tests**")
            out += [f"- `{f.name}` — {first_line(f.message)}" for f in s.tests.failures]
            if s.tests.failures_not_listed:  # the details keep the first failures, the total counts them all
                out.append(f"- … and {s.tests.failures_not_listed} more")
            out.append("")
        for error in s.errors:  # why the run failed: a budget spent, an answer never valid, the model's error
            out += [f"**Error** `{error.code or 'ERROR'}`: {first_line(error.message)}", ""]
        if s.finish is not None and s.finish.output is not None:  # the answer valid against --output-schema
            out += ["**Output**", "", "```json", *output_lines(s.finish.output), "```", ""]
        if s.final_text.strip():
            out += ["<details><summary>Final message</summary>", "", s.final_text.strip(), "", "</details>", ""]
        return "\n".join(out) + "\n"

    def _group(self, call: Call, title: str) -> None:
        self._end_group()
        self._command(command("group", title))
        self._open = call.id

    def _end_group(self) -> None:
        if self._open is not None:
            self._open = None
            self._command("::endgroup::")

    def _print_text(self, text_id: str) -> None:
        if text_id in self._printed_texts:
            return
        self._printed_texts.add(text_id)
        text = self.summary.texts.get(text_id, "").strip("\n")
        if text.strip():
            self._end_group()
            for line in text.splitlines():
                self._line(line.rstrip())

    def _print_texts(self) -> None:  # those not printed yet: redrawing 2,000 rows must not walk every text each row
        for text_id in self.summary.text_ids[self._texts_walked :]:
            self._print_text(text_id)
        self._texts_walked = len(self.summary.text_ids)

    def _line(self, text: str) -> None:
        """Lines of text (the model's, a tool's, cog's words about them): never a command."""
        if self._stopped is None:
            token = secrets.token_hex(16)  # made now: nothing written before this line could know it
            self._write(f"::stop-commands::{token}")
            self._stopped = token
        for line in visible(text).split("\n"):  # control characters from files, models, tools: escaped
            self._write(plain(line))

    def _command(self, text: str) -> None:
        """One of cog's own workflow commands (made by :func:`command`: its parts escaped)."""
        self._resume()
        self._write(visible(text, one_line=True))

    def _resume(self) -> None:
        if self._stopped is not None:
            self._write(f"::{self._stopped}::")
            self._stopped = None

    def _write(self, line: str) -> None:
        if self.broken:
            return
        try:
            self.out.write(line + "\n")
            self.out.flush()
        except BrokenPipeError:
            self.broken = True
