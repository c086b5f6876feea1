"""Keeping the history a model reads inside its context window.

Every request is counted: the provider's reported input tokens are the truth, and the next
request is estimated from the last report plus the text added since (:class:`ContextBudget`).
Before a request would pass ``threshold`` (80%) of the window, the history is compacted down to
``target`` (50%), in two stages:

1. :func:`drop_results` — older tool results' content is replaced by a one-line stub saying what
   it was and how to get it again (``[read_file src/a.py, lines 1–200: dropped to save context;
   read it again if needed]``), oldest turns first and within a turn the largest first; the last
   turn (the results the model has not read yet) is never touched;
2. :func:`summarize` — if that is not enough, the model is asked for a summary of the work so far,
   which replaces the oldest turns (the user's own words are kept verbatim beside it).

Only the history the model reads is compacted; memory (the thread) keeps every full result. A
provider's context-length error triggers one compaction down to a tighter target and a retry.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cogcli.events import CompactionEvent, DroppedResult
from cogcli.instructions import instruction_note
from cogcli.models.base import Message, TextDelta, ToolCallRequest, ToolSpec, UsageReport

if TYPE_CHECKING:
    from cogcli.tools import Tool

log = logging.getLogger("cogcli")

#: compact before a request would pass this share of the window …
THRESHOLD = 0.8
#: … down to this share
TARGET = 0.5
#: after a context-length error: down to this share of the (possibly newly learnt) window
RETRY_TARGET = 0.4
#: characters per token when nothing better is known (code and JSON run about 3.5–4)
CHARS_PER_TOKEN = 3.5
#: a result shorter than this (in estimated tokens) is not worth a stub
MIN_DROP_TOKENS = 60
STUB_MARK = ": dropped to save context;"
SUMMARY_MARK = "[Summary of the earlier work in this thread"

SUMMARY_PROMPT = """\
You are summarizing a coding agent's work so far, so that it can go on with less context.
Write a summary another engineer could continue from: the task as the user gave it; what was
found (files, functions, causes, with exact paths and names); what was changed and why; the
last test results; what is still to do. Keep exact identifiers, paths, error messages and
commands. Do not invent anything. Plain text, at most about 400 words."""


def estimate_text(text: str) -> int:
    """Tokens ``text`` takes, estimated from its length (rounded up)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1 if text else 0


def estimate_message(message: Message) -> int:
    """Tokens one message takes: its content, its calls' names and arguments, and a few for its framing."""
    tokens = 4 + estimate_text(message.content)
    for call in message.tool_calls:
        args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
        tokens += 4 + estimate_text(call.name) + estimate_text(args)
    return tokens


def estimate_messages(messages: Sequence[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_specs(specs: Sequence[ToolSpec]) -> int:
    return sum(estimate_text(json.dumps(s.model_dump(), ensure_ascii=False)) for s in specs)


# --- stage 1: results replaced by stubs ----------------------------------------------------


def _short(value: Any, limit: int = 60) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


#: ``(tool name, arguments) -> (what the call was, how to get its result again)``
Describe = Callable[[str, Any], tuple[str, str]]


def describe_call(name: str, arguments: Any) -> tuple[str, str]:
    """(what a call was, how to get its result again) for a tool that declares no ``recall``:
    its name, its ``path`` and its short arguments (numbers, flags, strings of a line), e.g.
    ``('search_text src {"pattern": "TODO"}', "call it again if needed")``."""
    args = arguments if isinstance(arguments, dict) else {}
    path = args.get("path")
    what = name
    if isinstance(path, str) and path:
        what += f" {path}"
    rest = {k: v for k, v in args.items() if k != "path" and _worth_naming(v)}
    if rest:
        what += " " + _short(rest)
    return what, "call it again if needed"


def _worth_naming(value: Any) -> bool:
    """A short argument that tells calls apart (not a file's content, not an empty default)."""
    if value is None or value in ("", [], {}):
        return False
    if isinstance(value, (bool, int, float)):
        return True
    if isinstance(value, str):
        return len(value) <= 80 and "\n" not in value
    if isinstance(value, list):
        return all(isinstance(v, str) and len(v) <= 80 for v in value) and len(value) <= 8
    return False


def describer(tools: Mapping[str, Tool[Any]]) -> Describe:
    """:func:`describe_call` that asks each tool's ``recall`` declaration first."""

    def describe(name: str, arguments: Any) -> tuple[str, str]:
        tool = tools.get(name)
        if tool is not None and tool.recall is not None and isinstance(arguments, dict):
            try:
                return tool.recall(arguments)
            except Exception:  # a declaration that fails on odd arguments: the plain description
                log.debug("recall of %r failed on %r", name, arguments, exc_info=True)
        return describe_call(name, arguments)

    return describe


def stub_for(name: str, arguments: Any, content: str, describe: Describe = describe_call) -> str:
    """The one line a dropped result becomes (any instruction note the result carried is kept)."""
    what, again = describe(name, arguments)
    stub = f"[{what}{STUB_MARK} {again}]"
    note = instruction_note(content)
    return f"{stub}\n\n{note}" if note else stub


def turns(history: Sequence[Message]) -> list[tuple[int, int]]:
    """``(start, end)`` of each turn: an assistant message and the tool results that follow it."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(history):
        if history[i].role == "assistant":
            j = i + 1
            while j < len(history) and history[j].role == "tool":
                j += 1
            out.append((i, j))
            i = j
        else:
            i += 1
    return out


def is_stub(message: Message) -> bool:
    return message.role == "tool" and message.content.startswith("[") and STUB_MARK in message.content.split("\n", 1)[0]


def drop_results(
    history: Sequence[Message], *, need: int, ratio: float = 1.0, describe: Describe = describe_call
) -> tuple[list[Message], list[DroppedResult], int]:
    """Replace older results by stubs until about ``need`` estimated tokens are saved (``ratio``
    converts estimates to the provider's tokens). Returns the new history (the messages not
    touched are the same objects), what was dropped, and the tokens saved. The last turn is kept."""
    spans = turns(history)
    if len(spans) < 2:
        return list(history), [], 0
    calls: dict[str, ToolCallRequest] = {}
    for start, _ in spans:
        for call in history[start].tool_calls:
            calls[call.id] = call
    out = list(history)
    dropped: list[DroppedResult] = []
    saved = 0
    for start, end in spans[:-1]:  # oldest first; never the last turn
        sizes = [(len(history[k].content), k) for k in range(start + 1, end)]
        args = sum(len(_arguments_text(c.arguments)) for c in history[start].tool_calls)
        if args > MAX_KEPT_ARGUMENT * 2:  # the turn's own long arguments (a written file's content) count too
            sizes.append((args, start))
        for _, k in sorted(sizes, key=lambda item: -item[0]):  # largest first
            if saved >= need:
                return out, dropped, saved
            message = history[k]
            if k == start:
                shortened, gone = shorten_calls(message, describe)
                if gone:
                    out[k] = shortened
                    saved += int((estimate_message(message) - estimate_message(shortened)) * ratio)
                    dropped.extend(gone)
                continue
            if is_stub(message):
                continue
            before = estimate_message(message)
            if before < MIN_DROP_TOKENS:
                continue
            call = calls.get(message.tool_call_id or "")
            name = message.name or (call.name if call else "tool")
            stub = stub_for(name, call.arguments if call else None, message.content, describe)
            out[k] = message.model_copy(update={"content": stub})
            gain = int((before - estimate_message(out[k])) * ratio)
            saved += gain
            dropped.append(DroppedResult(tool_call_id=message.tool_call_id or "", tool_name=name, stub=stub.split("\n", 1)[0], tokens=int(before * ratio)))
    return out, dropped, saved


def _arguments_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


#: a call argument longer than this (characters) is dropped from older turns
MAX_KEPT_ARGUMENT = 300


def _shorten(value: Any) -> tuple[Any, int]:
    """``value`` with every string longer than :data:`MAX_KEPT_ARGUMENT` replaced by a note; characters dropped."""
    if isinstance(value, str):
        if len(value) > MAX_KEPT_ARGUMENT:
            return f"[{len(value):,} characters dropped to save context]", len(value)
        return value, 0
    if isinstance(value, dict):
        out, total = {}, 0
        for k, v in value.items():
            out[k], n = _shorten(v)
            total += n
        return out, total
    if isinstance(value, list):
        items = [_shorten(v) for v in value]
        return [v for v, _ in items], sum(n for _, n in items)
    return value, 0


def shorten_calls(message: Message, describe: Describe = describe_call) -> tuple[Message, list[DroppedResult]]:
    """An older assistant turn with its calls' long argument values (a written file's content, a
    megabyte the model sent by mistake) replaced by notes; what was dropped, per call."""
    calls: list[ToolCallRequest] = []
    gone: list[DroppedResult] = []
    for call in message.tool_calls:
        arguments, dropped = _shorten(call.arguments)
        if dropped:
            what, _ = describe(call.name, call.arguments)  # (the long values it drops are not named anyway)
            gone.append(DroppedResult(tool_call_id=call.id, tool_name=call.name, stub=f"[arguments of {what}{STUB_MARK} {dropped:,} characters]", tokens=estimate_text("x" * dropped)))
            call = call.model_copy(update={"arguments": arguments})
        calls.append(call)
    if not gone:
        return message, []
    return message.model_copy(update={"tool_calls": calls}), gone


# --- stage 2: the oldest turns replaced by a summary ------------------------------------------


def summary_cut(history: Sequence[Message], *, keep_tokens: int) -> tuple[int, int]:
    """``(first, cut)``: the messages ``history[first:cut]`` a summary replaces — from after the
    leading system messages up to the start of the oldest turn kept. Kept: the last turn always,
    and the turns before it while they fit in ``keep_tokens``. ``first == cut``: nothing to summarize."""
    first = 0
    while first < len(history) and history[first].role == "system":
        first += 1
    spans = turns(history)
    if not spans:
        return first, first
    cut = spans[-1][0]
    kept = estimate_messages(history[cut:])
    for start, end in reversed(spans[:-1]):
        size = estimate_messages(history[start:end])
        if kept + size > keep_tokens:
            break
        kept += size
        cut = start
    return first, max(first, cut)


def transcript(messages: Sequence[Message], *, max_chars: int, result_chars: int = 1500) -> str:
    """The messages as plain text for the summarizer, each result cut to ``result_chars``, the
    whole to ``max_chars`` (the oldest part goes first; the user's first words always stay)."""
    lines: list[str] = []
    for m in messages:
        if m.role == "user":
            lines.append(f"USER: {m.content}")
        elif m.role == "assistant":
            text = f"ASSISTANT: {m.content}" if m.content else "ASSISTANT:"
            for c in m.tool_calls:
                text += f"\n  call {c.name}({_short(c.arguments, 300)})"
            lines.append(text)
        elif m.role == "tool":
            body = m.content if len(m.content) <= result_chars else m.content[:result_chars] + f"\n… [{len(m.content) - result_chars:,} more characters]"
            lines.append(f"RESULT of {m.name or 'tool'}:\n{body}")
    text = "\n\n".join(lines)
    if len(text) <= max_chars:
        return text
    head = lines[0][: max_chars // 4] if lines else ""
    tail = text[-(max_chars - len(head) - 40) :]
    return f"{head}\n\n[… earlier part left out …]\n\n{tail}"


def mechanical_summary(messages: Sequence[Message], describe: Describe = describe_call) -> str:
    """A summary made without the model (when asking it failed): the calls made, in order."""
    done: list[str] = []
    for m in messages:
        if m.role == "assistant":
            if m.content.strip():
                done.append("- said: " + _short(m.content, 200))
            for c in m.tool_calls:
                what, _ = describe(c.name, c.arguments)
                done.append(f"- called {what}")
    return "The model could not be asked for a summary; the calls made so far were:\n" + "\n".join(done[-80:])


_WORDS_HEAD = "What the user asked, in their words:\n"
_SUMMARY_HEAD = "\n\nSummary of the work so far:\n"
_NOTES_HEAD = "Instructions for parts of the project (AGENTS.md files met so far):\n"


def summary_message(replaced: Sequence[Message], summary: str) -> Message:
    """The one user message that stands for ``replaced``: the user's own words (also those an
    earlier summary among ``replaced`` carried), the instruction notes of subdirectories' AGENTS.md
    files that came with the replaced results (the model is told each only once), then the summary."""
    words: list[str] = []
    notes: list[str] = []
    for m in replaced:
        note = ""
        if m.role == "tool":
            note = instruction_note(m.content)
        elif m.role == "user" and m.content.startswith(SUMMARY_MARK):  # an earlier summary: what it carried
            head, _, note = m.content.partition(_SUMMARY_HEAD)[0].partition("\n\n" + _NOTES_HEAD)
            _, found, said = head.partition(_WORDS_HEAD)
            if found:
                words.append(said)
        elif m.role == "user":
            words.append(m.content)
        if note and note not in notes:
            notes.append(note)
    parts = [f"{SUMMARY_MARK}, written to save context. Every full result is kept in the thread; call the tools again if you need exact text.]"]
    if words:
        parts.append(_WORDS_HEAD + "\n\n".join(words))
    if notes:
        parts.append(_NOTES_HEAD + "\n\n".join(notes))
    return Message(role="user", content="\n\n".join(parts) + _SUMMARY_HEAD + summary.strip())


# --- the budget ----------------------------------------------------------------------------


#: ``async (messages) -> str``: the model's answer to a summary request
Summarizer = Callable[[list[Message]], Any]


@dataclass
class ContextBudget:
    """Counts what a run sends and compacts the history before it would overflow ``window``.

    The run calls :meth:`before_request` with the history it is about to send, :meth:`observe`
    with each reported usage, and :meth:`after_overflow` when the provider refused a request as
    too long. Without a window nothing is compacted until a context-length error says one."""

    window: int | None
    specs: Sequence[ToolSpec] = ()
    #: what an old call was, for its stub (:func:`describer` of the run's tools)
    describe: Describe = describe_call
    threshold: float = THRESHOLD
    target: float = TARGET
    #: the largest request (input tokens as reported, else as estimated)
    peak: int = 0
    compactions: int = 0
    #: the history last sent; the history the last report counted and the input tokens it reported
    _sent: list[Message] = field(default_factory=list)
    _counted: list[Message] = field(default_factory=list)
    _reported: int | None = None
    _reported_for: int = 0  # estimate of what was sent when the report came
    _specs_tokens: int | None = None
    #: id(message) -> (message, its estimate): each message is estimated once per run, not per request
    _sizes: dict[int, tuple[Message, int]] = field(default_factory=dict)

    # --- counting -------------------------------------------------------------------------

    @property
    def ratio(self) -> float:
        """Provider tokens per estimated token, learnt from the last report (1.0 before any)."""
        if self._reported and self._reported_for:
            return min(4.0, max(0.25, self._reported / self._reported_for))
        return 1.0

    def raw(self, history: Sequence[Message]) -> int:
        if self._specs_tokens is None:
            self._specs_tokens = estimate_specs(self.specs)
        return self._messages(history) + self._specs_tokens

    def _messages(self, messages: Sequence[Message]) -> int:
        total = 0
        sizes = self._sizes
        for m in messages:
            known = sizes.get(id(m))
            if known is None or known[0] is not m:
                known = sizes[id(m)] = (m, estimate_message(m))
            total += known[1]
        return total

    def estimate(self, history: Sequence[Message]) -> int:
        """Tokens a request with ``history`` will take: the last report plus the text added since
        when ``history`` extends what was sent, else the estimate scaled by what reports taught."""
        sent = self._counted
        if self._reported is not None and len(history) >= len(sent) and all(a is b for a, b in zip(sent, history)):
            added = self._messages(history[len(sent) :])
            return self._reported + int(added * max(1.0, self.ratio))
        return int(self.raw(history) * self.ratio)

    def sent(self, history: Sequence[Message]) -> None:
        """``history`` is what goes out with the next request."""
        self._sent = list(history)
        keep = set(map(id, self._sent)) | set(map(id, self._counted))  # forget messages compaction replaced
        self._sizes = {k: v for k, v in self._sizes.items() if k in keep}

    def observe(self, usage: UsageReport) -> None:
        """A provider's usage report for the request last :meth:`sent`."""
        if usage.input_tokens <= 0:
            return
        self._reported = usage.input_tokens
        self._counted = self._sent
        self._reported_for = self.raw(self._sent)
        self.peak = max(self.peak, usage.input_tokens)

    def limit(self) -> int | None:
        return int(self.window * self.threshold) if self.window else None

    # --- compacting -------------------------------------------------------------------------

    async def before_request(
        self, history: list[Message], *, summarize: Summarizer | None = None, emit: Callable[[Any], Any] | None = None
    ) -> list[Message]:
        """The history to send: ``history`` itself, or a compacted copy when it would pass the
        threshold (a ``compaction`` event is emitted then)."""
        estimate = self.estimate(history)
        limit = self.limit()
        if limit is not None and estimate > limit:
            assert self.window is not None
            history = await self.compact(history, goal=int(self.window * self.target), reason="threshold", summarize=summarize, emit=emit, before=estimate)
            estimate = self.estimate(history)
        if self._reported is None:  # nothing reported yet: the estimate is all we know
            self.peak = max(self.peak, estimate)
        self.sent(history)
        return history

    async def after_overflow(
        self,
        history: list[Message],
        *,
        limit: int | None = None,
        tokens: int | None = None,
        summarize: Summarizer | None = None,
        emit: Callable[[Any], Any] | None = None,
    ) -> list[Message]:
        """The provider refused ``history`` as too long (its message may say the window and the
        request's size): learn from it and compact further than usual."""
        if limit and (self.window is None or limit < self.window):
            self.window = limit
        if tokens:  # the provider counted the refused request: calibrate on it
            self._reported, self._reported_for, self._counted = tokens, self.raw(history), list(history)
        before = self.estimate(history)
        window = self.window or max(1, int(before / 1.25))  # no window known: aim well below what failed
        history = await self.compact(history, goal=int(window * RETRY_TARGET), reason="context-length-error", summarize=summarize, emit=emit, before=before)
        self.sent(history)
        return history

    async def compact(
        self,
        history: list[Message],
        *,
        goal: int,
        reason: str,
        summarize: Summarizer | None,
        emit: Callable[[Any], Any] | None,
        before: int,
    ) -> list[Message]:
        ratio = self.ratio
        new, dropped, _ = drop_results(history, need=max(0, before - goal), ratio=ratio, describe=self.describe)
        summarized = 0
        summary_tokens: int | None = None
        after = int(self.raw(new) * ratio)
        if after > goal:
            first, cut = summary_cut(new, keep_tokens=max(1, int(goal / max(ratio, 0.25) / 2)))
            if any(m.role == "assistant" for m in new[first:cut]):  # only the user's words: nothing to summarize
                replaced = new[first:cut]
                text = await self._summary(replaced, summarize)
                message = summary_message(replaced, text)
                new = [*new[:first], message, *new[cut:]]
                summarized = len(replaced)
                summary_tokens = int(estimate_message(message) * ratio)
                after = int(self.raw(new) * ratio)
        if not dropped and not summarized:
            log.info("the history could not be compacted further (%d tokens; the last turn is kept whole)", before)
            return history
        self.compactions += 1
        if emit is not None:
            emit(
                CompactionEvent(
                    reason=reason,
                    tokens_before=before,
                    tokens_after=after,
                    context_window=self.window,
                    dropped=dropped,
                    summarized_messages=summarized,
                    summary_tokens=summary_tokens,
                )
            )
        return new

    async def _summary(self, replaced: list[Message], summarize: Summarizer | None) -> str:
        if summarize is None:
            return mechanical_summary(replaced, self.describe)
        budget_chars = int((self.window or 32_000) * 0.5 * CHARS_PER_TOKEN)
        request = [
            Message(role="system", content=SUMMARY_PROMPT),
            Message(role="user", content="The work so far:\n\n" + transcript(replaced, max_chars=budget_chars)),
        ]
        try:
            text = await summarize(request)
        except Exception as exc:  # the summary is a help, never the end of the run
            log.warning("asking the model for a summary failed (%s); a list of the calls made stands in", exc)
            return mechanical_summary(replaced, self.describe)
        return text if isinstance(text, str) and text.strip() else mechanical_summary(replaced, self.describe)


async def model_summary(model: Any, messages: list[Message], on_usage: Callable[[UsageReport], Any] | None = None) -> str:
    """Stream one turn of ``model`` on ``messages`` (no tools) and return its text; its usage goes to ``on_usage``."""
    parts: list[str] = []
    async for event in model.stream(messages, []):
        if isinstance(event, TextDelta):
            parts.append(event.text)
        elif isinstance(event, UsageReport) and on_usage is not None:
            on_usage(event)
    return "".join(parts)
