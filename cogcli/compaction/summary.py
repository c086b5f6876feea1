"""Compaction's second stage: the oldest turns replaced by one message — the user's own words kept
verbatim, the subdirectories' instruction notes the replaced results carried, and a summary of the
work so far (the model's, from :func:`transcript`; or, when asking it failed, the calls made).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from cogcli.compaction.estimate import CHARS_PER_TOKEN, estimate_messages
from cogcli.compaction.stubs import Describe, describe_call, short_text, turns
from cogcli.project.instructions import instruction_note
from cogcli.models.base import Message, TextDelta, UsageReport

SUMMARY_MARK = "[Summary of the earlier work in this thread"


SUMMARY_PROMPT = """\
You are summarizing a coding agent's work so far, so that it can go on with less context.
Write a summary another engineer could continue from: the task as the user gave it; what was
found (files, functions, causes, with exact paths and names); what was changed and why; the
last test results; what is still to do. Keep exact identifiers, paths, error messages and
commands. Do not invent anything. Plain text, at most about 400 words."""


def summary_cut(history: Sequence[Message], *, keep_tokens: int) -> tuple[int, int]:
    """``(first, cut)``: the messages ``history[first:cut]`` a summary replaces — from after the
    leading system messages and the first user message (the task: kept byte for byte, with the
    system prompt and the tools, so the provider's prompt cache still holds that prefix after the
    compaction) up to the start of the oldest turn kept. Kept: the last turn always, and the turns
    before it while they fit in ``keep_tokens``. ``first == cut``: nothing to summarize."""
    first = kept_head(history)
    spans = [span for span in turns(history) if span[0] >= first]
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


def kept_head(history: Sequence[Message]) -> int:
    """How many messages at the start of ``history`` no compaction rewrites: the leading system
    messages and the first user message after them."""
    first = 0
    while first < len(history) and history[first].role == "system":
        first += 1
    if first < len(history) and history[first].role == "user":
        first += 1
    return first


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
                text += f"\n  call {c.name}({short_text(c.arguments, 300)})"
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


def summary_request(messages: Sequence[Message], window: int | None) -> list[Message]:
    """What the model is asked to summarize ``messages`` with: the summary prompt and their
    transcript, cut to half the context window (``window``: None for a 32k default)."""
    max_chars = int((window or 32_000) * 0.5 * CHARS_PER_TOKEN)
    return [
        Message(role="system", content=SUMMARY_PROMPT),
        Message(role="user", content="The work so far:\n\n" + transcript(messages, max_chars=max_chars)),
    ]


def mechanical_summary(messages: Sequence[Message], describe: Describe = describe_call) -> str:
    """A summary made without the model (when asking it failed): the calls made, in order."""
    done: list[str] = []
    for m in messages:
        if m.role == "assistant":
            if m.content.strip():
                done.append("- said: " + short_text(m.content, 200))
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


async def model_summary(model: Any, messages: list[Message], on_usage: Callable[[UsageReport], Any] | None = None) -> str:
    """Stream one turn of ``model`` on ``messages`` (no tools) and return its text; its usage goes to ``on_usage``."""
    parts: list[str] = []
    async for event in model.stream(messages, []):
        if isinstance(event, TextDelta):
            parts.append(event.text)
        elif isinstance(event, UsageReport) and on_usage is not None:
            on_usage(event)
    return "".join(parts)
