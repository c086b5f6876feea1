"""cog's events as ACP ``session/update`` notifications, for a live run and a stored one alike.

One :class:`EventMapper` per ACP session turns each wire event (:mod:`cogcli.wire.events`) into the
updates an editor draws:

- ``text-delta`` → ``agent_message_chunk``;
- ``reasoning-delta`` → ``agent_thought_chunk`` (the model's reasoning, redacted like its text);
- ``tool-call-end`` (the arguments are complete) → ``tool_call``: ``title`` from the call's
  presentation (label · detail), ``kind`` from what its tool declares (:attr:`cogcli.contract.tool.Tool.kind`),
  ``locations`` with absolute paths (and the first line of a read range);
- ``tool-update`` → ``tool_call_update`` ``in_progress`` with the progress text (one per test for
  run_tests; a ``task``'s subagent calls so far, a line each), or the arguments the call really runs with;
- ``tool-result`` → ``tool_call_update`` ``completed``/``failed``: what the model read (as text),
  ``diff`` items for a file change (from the details' diff), the error with its code, and the
  locations of failed tests;
- ``start`` of a stored run → ``user_message_chunk`` (the instruction), so a loaded thread redraws;
- ``error`` → an ``agent_message_chunk`` saying what went wrong.

Everything read of a call's details or arguments is read through :mod:`cogcli.contract.details`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, get_args

from acp import schema as acp_schema
from acp.helpers import (
    start_tool_call,
    text_block,
    tool_content,
    tool_diff_content,
    update_agent_message,
    update_agent_thought,
    update_tool_call,
    update_user_message,
)

from cogcli.gate.approval import describe
from cogcli.contract.details_readers import (
    file_argument, file_change_diff, line_argument, read_diagnostics, read_output_lines, read_test_report, subagent_step,
)
from cogcli.contract.diffstat import hunk_sides
from cogcli.contract.output import content_text
from cogcli.contract.presentation import ToolPresentation
from cogcli.shown.visible import visible

#: the tools a mapper reads declarations from (a session's :meth:`~cogcli.session.Session.run_tools`)
ToolLookup = Callable[[], Iterable[Any]]

#: lines of a running command's output each update carries
OUTPUT_LINES = 40

#: the ACP tool kinds (``schema.ToolKind``): a tool declaring anything else is drawn as "other"
TOOL_KINDS = frozenset(get_args(acp_schema.ToolKind))


#: new problems an editor is sent for a file change (the rest counted)
DIAGNOSTICS_SHOWN = 20


def title_of(tool_name: str, presentation: ToolPresentation | None) -> str:
    """``Edit file · calc/ops.py``: the presentation's label and detail on one line (control
    characters escaped: paths and names come from the workspace and the model)."""
    return visible(describe(tool_name, presentation), one_line=True)


def kind_of(tool: Any) -> str:
    kind = getattr(tool, "kind", None)
    return kind if kind in TOOL_KINDS else "other"


def inside(root: Path, relative: str) -> Path | None:
    """``relative`` as an absolute path in the workspace ``root``, or None when it leaves it (a
    path from the model: ``../../etc/passwd`` names no location of this workspace)."""
    if not relative or "\x00" in relative:
        return None
    joined = Path(os.path.normpath(root / relative))
    try:
        joined.relative_to(root)
    except ValueError:
        return None
    return joined


def location(root: Path, relative: str | None, line: int | None = None) -> acp_schema.ToolCallLocation | None:
    if relative is None:
        return None
    path = inside(root, relative)
    if path is None:
        return None
    return acp_schema.ToolCallLocation(path=str(path), line=line if line is not None and line >= 0 else None)


# --- diffs -----------------------------------------------------------------------------------


def diff_items(root: Path, diff: str | None) -> list[acp_schema.FileEditToolCallContent]:
    """ACP ``diff`` items of a unified diff: per changed region (hunk) of each file, its old text
    (context and removed lines) and new text (context and added lines), the path absolute. A
    file the diff creates has no old text; a file it deletes has an empty new text."""
    if not diff:
        return []
    from unidiff import PatchSet
    from unidiff.errors import UnidiffParseError

    try:
        patch = PatchSet(diff)
    except UnidiffParseError:
        return []
    items = []
    for patched in patch:
        path = inside(root, patched.path)
        if path is None:
            continue
        for hunk in patched:
            old, new = ("".join(side) for side in hunk_sides(hunk))
            created = patched.is_added_file
            items.append(tool_diff_content(str(path), "" if patched.is_removed_file else new, None if created else old))
    return items




def first_changed_line(diff: str | None) -> int | None:
    """The first line of the new file a unified diff changes, for a location."""
    if not diff:
        return None
    for line in diff.splitlines():
        if line.startswith("@@ +") or line.startswith("@@ -"):
            try:
                new = line.split("+", 1)[1].split(" ", 1)[0]
                return max(1, int(new.split(",", 1)[0]))
            except (IndexError, ValueError):
                return None
    return None


def preview_content(root: Path, preview: Mapping[str, Any] | None) -> list[Any]:
    """What an approval's preview shows the person (:attr:`cogcli.wire.events.Approval.preview`): the
    diff items of a file change, or the command a call would run."""
    if not preview:
        return []
    from cogcli.shown.approval import exact_lines

    diff = preview.get("diff")
    if isinstance(diff, str) and diff.strip():
        items: list[Any] = diff_items(root, diff)
        if items:
            shown = exact_lines(diff.removesuffix("\n"))
            if shown != diff.removesuffix("\n").split("\n"):  # what an editor may not draw, drawn exactly too
                note = "The change holds characters an editor may not show; exactly, escaped:\n"
                items.append(tool_content(text_block(note + "\n".join(shown))))
            return items
    command = preview.get("command")
    if isinstance(command, str) and command:
        return [tool_content(text_block("Runs: " + "\n".join(exact_lines(command))))]
    return []


# --- the mapper ------------------------------------------------------------------------------


class EventMapper:
    """Turns one session's events into ACP session updates; remembers each call's tool and
    arguments between its ``tool-call-end`` and its result."""

    def __init__(self, root: Path, tools: ToolLookup, *, user_texts: Mapping[str, str] | None = None) -> None:
        self.root = root
        self.tools = tools
        #: a stored run's instruction by its message id (a replay draws it as the user's message)
        self.user_texts = dict(user_texts or {})
        self.calls: dict[str, _Call] = {}
        #: a running command's last output lines, sent whole with each update (a terminal's view)
        self.output: dict[str, list[str]] = {}
        #: a running task's subagent calls (its call id → its line), sent whole with each update
        self.steps: dict[str, dict[str, str]] = {}

    def tool(self, name: str) -> Any:
        return next((t for t in self.tools() if getattr(t, "name", None) == name), None)

    def updates(self, event: Any) -> list[Any]:
        kind = getattr(event, "type", None)
        handler = _HANDLERS.get(kind or "")
        return handler(self, event) if handler is not None else []

    # --- one per event type -----------------------------------------------------------------

    def _start(self, event: Any) -> list[Any]:
        text = self.user_texts.get(event.message_id)
        return [update_user_message(text_block(text))] if text else []

    def _text(self, event: Any) -> list[Any]:
        return [update_agent_message(text_block(event.delta))] if event.delta else []

    def _thought(self, event: Any) -> list[Any]:
        return [update_agent_thought(text_block(event.delta))] if event.delta else []

    def _call_end(self, event: Any) -> list[Any]:
        presentation = event.presentation  # the run resolved it; a replayed thread's events carry none
        if presentation is None:
            from cogcli.contract.prepare import prepare

            presentation = prepare(event.tool_name, event.arguments, call_id=event.id, tools=list(self.tools())).presentation
        state = _Call(self.tool(event.tool_name), event.arguments, presentation)
        self.calls[event.id] = state
        return [
            start_tool_call(
                event.id,
                title_of(event.tool_name, state.presentation),
                kind=kind_of(state.tool),  # type: ignore[arg-type]
                status="pending",
                locations=self.call_locations(state),
                raw_input=event.arguments,
            )
        ]

    def _tool_update(self, event: Any) -> list[Any]:
        state = self.calls.get(event.tool_call_id)
        if event.arguments is not None and state is not None:  # middleware changed what the call runs with
            state.arguments = event.arguments
            return [update_tool_call(event.tool_call_id, raw_input=event.arguments, locations=self.call_locations(state))]
        if event.content is None:
            return []
        text = event.content if isinstance(event.content, str) else content_text(event.content)
        lines = read_output_lines(event.details, event.content)
        if lines is not None:  # a command's output: the whole tail so far, as a terminal shows it
            tail = self.output[event.tool_call_id] = [*self.output.get(event.tool_call_id, []), *lines][-OUTPUT_LINES:]
            text = "```console\n" + "\n".join(tail) + "\n```"
        step = subagent_step(event.details)
        if step is not None:  # a subagent's calls, each a line with its outcome: the task call's content
            marks = {"running": "…", "done": "✓", "failed": "✗"}
            self.steps.setdefault(event.tool_call_id, {})[step[0]] = f"{marks.get(step[2], '·')} {visible(step[1], one_line=True)}"
            text = "\n".join(self.steps[event.tool_call_id].values())
        return [update_tool_call(event.tool_call_id, status="in_progress", content=[tool_content(text_block(text))])]

    def _result(self, event: Any) -> list[Any]:
        self.output.pop(event.tool_call_id, None)
        self.steps.pop(event.tool_call_id, None)
        state = self.calls.pop(event.tool_call_id, None)
        arguments = state.arguments if state is not None else None
        failed = event.error is not None or event.error_code is not None
        if failed:
            code = f" ({event.error_code})" if event.error_code else ""
            content: list[Any] = [tool_content(text_block(f"Error{code}: {event.error or 'the call failed'}"))]
        else:
            content = [tool_content(text_block(content_text(event.result)))]
        diff = file_change_diff(event.details)
        content += diff_items(self.root, diff)
        found = read_diagnostics(event.details)
        if found is not None and (found.new or found.fixed) and not failed:  # what the change introduced: "2 new errors" and each
            content.append(tool_content(text_block("\n".join([found.headline(), *found.lines(DIAGNOSTICS_SHOWN)]))))
        locations = self.result_locations(arguments, event.details, diff)
        presentation = event.presentation or (state.presentation if state is not None else None)
        raw_output = {"errorCode": event.error_code, "error": event.error} if failed else None
        return [
            update_tool_call(
                event.tool_call_id,
                title=title_of(event.tool_name, presentation),
                status="failed" if failed else "completed",
                content=content,
                locations=locations or None,
                raw_output=raw_output,
            )
        ]

    def _error(self, event: Any) -> list[Any]:
        code = f" ({event.code})" if event.code else ""
        return [update_agent_message(text_block(f"\n\ncog: {event.message}{code}\n"))]

    # --- locations --------------------------------------------------------------------------

    def call_locations(self, state: _Call) -> list[acp_schema.ToolCallLocation] | None:
        found = location(self.root, file_argument(state.arguments), line_argument(state.arguments))
        return [found] if found is not None else None

    def result_locations(self, arguments: Any, details: Any, diff: str | None) -> list[acp_schema.ToolCallLocation]:
        """Where a finished call points: the file it changed (at its first changed line), or the
        tests that failed (file and line), else the file its arguments name."""
        found: list[acp_schema.ToolCallLocation] = []
        if diff is not None:
            changed = location(self.root, file_argument(arguments), first_changed_line(diff))
            return [changed] if changed is not None else []
        report = read_test_report(details)
        if report is not None:
            for failure in report.failures:
                at = location(self.root, failure.file, failure.line)
                if at is not None and Path(at.path).is_file() and at not in found:
                    found.append(at)
            return found
        at = location(self.root, file_argument(arguments), line_argument(arguments))
        return [at] if at is not None else []


class _Call:
    __slots__ = ("tool", "arguments", "presentation")

    def __init__(self, tool: Any, arguments: Any, presentation: ToolPresentation | None) -> None:
        self.tool = tool
        self.arguments = arguments
        self.presentation = presentation


_HANDLERS: dict[str, Callable[[EventMapper, Any], list[Any]]] = {
    "start": EventMapper._start,
    "text-delta": EventMapper._text,
    "reasoning-delta": EventMapper._thought,
    "tool-call-end": EventMapper._call_end,
    "tool-update": EventMapper._tool_update,
    "tool-result": EventMapper._result,
    "error": EventMapper._error,
}
