"""What a run's event stream adds up to: its calls, files changed, last test report, status, tokens.

Built from wire events only, so a live run, a saved ``--json`` stream and a stored thread give
the same summary — and the same exit code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cogcli.contract.errors import ErrorCode
from cogcli.wire.events import (
    ApprovalRequiredEvent,
    BaseEvent,
    ErrorEvent,
    FinishEvent,
    RunStatus,
    StartEvent,
    TextDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
    ToolResultEvent,
    ToolUpdateEvent,
    Usage,
)
from cogcli.wire.exit_codes import EXIT_INTERRUPTED, EXIT_OK, EXIT_TASK_FAILED, EXIT_TERMINATED, EXIT_USAGE, run_exit_code  # noqa: F401 (re-exported)
from cogcli.contract.presentation import ToolPresentation
from cogcli.contract.details_readers import read_background_job
from cogcli.render.details import TestReport, changes_view_diff, diff_stats, diff_text, file_argument, read_test_report, tests_not_run

#: the word a run's last line starts with, by its exit code (:func:`run_exit_code`, the one rule):
#: ``Done`` only for 0 (completed, and the last test run, if any, passed)
OUTCOME_WORDS = {EXIT_OK: "Done", EXIT_INTERRUPTED: "Aborted", EXIT_TERMINATED: "Aborted"}
#: what the last line adds after ``Failed`` when the status says why (tests, errors say it themselves)
STATUS_REASONS = {RunStatus.MAX_STEPS: "stopped at the step limit"}


@dataclass
class Call:
    """One tool call as the stream has told it so far."""

    id: str
    tool_name: str
    presentation: ToolPresentation | None = None
    arguments: Any = None
    result: ToolResultEvent | None = None
    #: the call's ``label · detail`` as its approval described it (:func:`cogcli.gate.approval.describe`):
    #: what a row says of a call that streamed without a presentation, before its result
    described: str | None = None

    @property
    def label(self) -> str:
        p = self.best_presentation
        if p is None and self.described:
            return self.described.partition(" · ")[0]
        return p.label if p is not None and p.label else self.tool_name

    @property
    def detail(self) -> str | None:
        p = self.best_presentation
        if p is None and self.described is not None:
            return self.described.partition(" · ")[2] or None
        return p.detail if p is not None else None

    @property
    def best_presentation(self) -> ToolPresentation | None:
        if self.result is not None and self.result.presentation is not None:
            return self.result.presentation
        return self.presentation


@dataclass
class FileStat:
    """Lines added and removed in one file over a run."""
    added: int = 0
    removed: int = 0


@dataclass
class RunSummary:
    """Fold events in with :meth:`add`; read the outcome when the ``finish`` event has arrived."""

    calls: dict[str, Call] = field(default_factory=dict)
    files: dict[str, FileStat] = field(default_factory=dict)
    tests: TestReport | None = None
    finish: FinishEvent | None = None
    thread_id: str | None = None
    #: the run's ``provider:model`` (from its ``start``), for the cost words of the last line
    model: str | None = None
    errors: list[ErrorEvent] = field(default_factory=list)
    texts: dict[str, str] = field(default_factory=dict)
    #: the ids of ``texts`` in the order they came (a renderer prints those after the last it printed)
    text_ids: list[str] = field(default_factory=list)
    last_text_id: str | None = None
    #: each background command's job id → whether it ran at the newest word on it (the live line ends with the count)
    jobs: dict[str, bool] = field(default_factory=dict)

    def call(self, call_id: str, tool_name: str | None = None) -> Call:
        found = self.calls.get(call_id)
        if found is None:
            found = self.calls[call_id] = Call(id=call_id, tool_name=tool_name or "tool")
        elif tool_name and found.tool_name == "tool":
            found.tool_name = tool_name
        return found

    def add(self, event: BaseEvent) -> None:
        if isinstance(event, StartEvent):
            if self.finish is not None:  # the next run of a stream of several (`cog thread show`): its own counts
                self.calls, self.files, self.tests, self.finish, self.errors = {}, {}, None, None, []
            self.thread_id = event.thread_id
            self.model = event.model or self.model
        elif isinstance(event, TextDeltaEvent):
            if event.id not in self.texts:
                self.text_ids.append(event.id)
            self.texts[event.id] = self.texts.get(event.id, "") + event.delta
            self.last_text_id = event.id
        elif isinstance(event, ToolCallStartEvent):
            c = self.call(event.id, event.tool_name)
            c.presentation = event.presentation or c.presentation
        elif isinstance(event, ToolCallEndEvent):
            c = self.call(event.id, event.tool_name)
            c.arguments = event.arguments
            c.presentation = event.presentation or c.presentation
        elif isinstance(event, ToolUpdateEvent):
            c = self.call(event.tool_call_id, event.tool_name)
            if event.arguments is not None:
                c.arguments = event.arguments
        elif isinstance(event, ToolResultEvent):
            self._add_result(event)
        elif isinstance(event, ApprovalRequiredEvent):
            for a in event.approvals if event.subagent is None else ():  # a subagent's calls are not this run's rows
                self.call(a.tool_call_id, a.tool_name).described = a.description or None
        elif isinstance(event, ErrorEvent):
            self.errors.append(event)
        elif isinstance(event, FinishEvent):
            self.finish = event
            self.thread_id = event.thread_id or self.thread_id

    def _add_result(self, event: ToolResultEvent) -> None:
        c = self.call(event.tool_call_id or event.id, event.tool_name)
        c.result = event
        diff = diff_text(event.details)
        # a view of many files' changes (git_status, git_diff) shows them; it did not make them
        if diff is not None and event.error is None and changes_view_diff(event.details) is None:
            for stat in diff_stats(diff):
                path = stat.path or file_argument(c.arguments) or "?"
                f = self.files.setdefault(path, FileStat())
                f.added += stat.added
                f.removed += stat.removed
        report = read_test_report(event.details)
        if report is not None:
            self.tests = report
        job = read_background_job(event.details)
        if job is not None:
            self.jobs[job[0]] = job[1]

    @property
    def jobs_running(self) -> int:
        """How many background commands run, as far as the events said."""
        return sum(self.jobs.values())

    # --- the outcome ---------------------------------------------------------------------

    @property
    def status(self) -> str | None:
        return self.finish.status if self.finish is not None else None

    @property
    def final_text(self) -> str:
        return self.texts.get(self.last_text_id, "") if self.last_text_id else ""

    @property
    def tests_errored(self) -> bool:
        """True when the run's last test run was a call that failed (timed out, could not start):
        the run says so in its ``finish`` event (``testsError``)."""
        return self.finish is not None and self.finish.tests_error is not None

    @property
    def tests_ok(self) -> bool:
        """True when no test ran, or the last test run passed."""
        if self.tests_errored:
            return False
        return self.tests is None or self.tests.ok

    def test_counts(self) -> tuple[int, int] | None:
        """(passed, failed) of the last test run: from its report, else from the finish event."""
        if self.tests is not None:
            return self.tests.passed, self.tests.failed + self.tests.errors
        if self.finish is not None and self.finish.tests:
            t = self.finish.tests
            return t.get("passed", 0), t.get("failed", 0) + t.get("errors", 0)
        return None

    def file_stats(self) -> dict[str, FileStat]:
        """The run's own count (finish.filesChanged) when the stream has it; counted from the
        diffs seen only for a stream without one (a cut stream, ``cog tool``)."""
        if self.finish is not None and self.finish.files_changed is not None:
            return {f.path: FileStat(f.added, f.removed) for f in self.finish.files_changed}
        return self.files

    def exit_code(self) -> int:
        """What the run this stream shows exits with (:func:`cogcli.wire.exit_codes.run_exit_code`)."""
        counts = self.test_counts()
        error_code = next((e.code for e in self.errors if e.code == ErrorCode.MODEL_CONFIG_ERROR), None)
        return run_exit_code(self.status, error_code=error_code, tests_failed=counts[1] if counts else 0,
                             tests_error=self.tests_errored)

    def outcome_word(self) -> str:
        """How the run ended, in one word that matches its exit code: ``Done`` (0), ``Aborted``
        (130), ``Denied`` (calls refused), else ``Failed`` (failing or unfinished tests, an error,
        the step limit); ``Unfinished`` for a stream without its ``finish``."""
        if self.finish is None:
            return "Unfinished"
        code = self.exit_code()
        if code in OUTCOME_WORDS:
            return OUTCOME_WORDS[code]
        return "Denied" if self.status == RunStatus.DENIED else "Failed"

    def line(self) -> str:
        """``Done · 5 steps · 1 file changed (+1 -1) · 3 tests passed · 5,392 tokens``; a run that
        did not end well says so first: ``Failed · 2 steps · 1 test failed, 2 passed · 40 tokens``."""
        parts = [self.outcome_word()]
        reason = STATUS_REASONS.get(self.status) if self.status is not None else None
        if self.status == RunStatus.BUDGET_EXCEEDED and self.finish is not None and self.finish.budget is not None:
            reason = budget_words(self.finish.budget)
        if reason is not None:
            parts.append(reason)
        steps = self.finish.steps if self.finish is not None else 0
        parts.append(_plural(steps, "step"))
        files = self.file_stats()
        if files:
            parts.append(_files_changed(files))
        counts = self.test_counts()
        if self.tests_errored:
            not_run = self.finish is not None and tests_not_run(self.finish.tests_error)
            parts.append("tests did not run" if not_run else "tests did not finish")
        elif counts is not None:
            passed, failed = counts
            if failed:
                parts.append(f"{_plural(failed, 'test')} failed, {passed} passed")
            else:
                parts.append(f"{_plural(passed, 'test')} passed")
        used = usage_words(self.finish.usage if self.finish is not None else None, self.model)
        if used:
            parts.append(used)
        return " · ".join(parts)


def budget_words(budget: Any) -> str:
    """``past its budget of 10,000 tokens`` / ``past its budget of $0.50``."""
    if budget.kind == "tokens":
        return f"past its budget of {int(budget.limit):,} tokens"
    return f"past its budget of ${budget.limit:g}" + (" (a cost was unknown)" if budget.used is None else "")


def usage_words(usage: Usage | None, model: str | None = None) -> str | None:
    """What the run used, for its last line (``5,392 tokens``); None when nothing is known. The one
    place the last line speaks of usage: cached tokens and cost belong here too. ``model`` is the
    run's ``provider:model``: a real model whose price cog does not know says ``unknown cost``
    (a replayed cassette costs nothing and says only what it recorded)."""
    if usage is None or not (usage.total_tokens or usage.input_tokens or usage.output_tokens):
        return None
    priced_model = model is not None and not model.startswith("replay:")
    return f"{_tokens(usage, unknown_cost=priced_model)} tokens"


def _tokens(usage: Usage, *, unknown_cost: bool = False) -> str:
    """What goes before " tokens" on the last line: the total, and when the provider reported its
    prompt cache or cog knows the price, the parts and the cost — ``$0.0123 for 5,000 in (4,000
    cache read, 500 cache write) + 392 out (300 reasoning) = 5,392`` (``unknown cost for …`` without a
    price; the reasoning part of the output where the provider said it)."""
    total = usage.total_tokens or (usage.input_tokens + usage.output_tokens)
    read, write, cost = usage.cached_input_tokens, usage.cache_write_tokens, usage.cost_usd
    if read is None and write is None and cost is None and not unknown_cost:
        return f"{total:,}"
    from cogcli.settings.prices import format_cost

    cache = [f"{n:,} {what}" for n, what in ((read, "cache read"), (write, "cache write")) if n is not None]
    spent = format_cost(cost) if cost is not None else "unknown cost"
    parts = f" ({', '.join(cache)})" if cache else ""
    thought = f" ({usage.reasoning_tokens:,} reasoning)" if usage.reasoning_tokens else ""
    return f"{spent} for {usage.input_tokens:,} in{parts} + {usage.output_tokens:,} out{thought} = {total:,}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _files_changed(files: dict[str, FileStat]) -> str:
    """``2 files changed (+3 -1)``. A file whose lines were not counted (a command's binary or large
    file, or one changed outside a run: 0 and 0) is not summed as if they were known: ``3 files
    changed (+3 -1 in 1)``, and no counts at all when no file has any, rather than a false ``(+0 -0)``."""
    counted = [f for f in files.values() if f.added or f.removed]
    said = f"{_plural(len(files), 'file')} changed"
    if not counted:
        return said
    added = sum(f.added for f in counted)
    removed = sum(f.removed for f in counted)
    return f"{said} (+{added} -{removed}{'' if len(counted) == len(files) else f' in {len(counted)}'})"

