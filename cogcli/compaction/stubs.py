"""Compaction's first stage: older tool results replaced by a one-line stub saying what each was
and how to get it again (``[read_file src/a.py, lines 1–200: dropped to save context; read it again
if needed]``), and older calls' long arguments by a note — oldest turns first, within a turn the
largest first, never the last turn. An image a result held goes with its text (it weighs what its
pixels cost, :func:`~cogcli.models.tokens.estimate_image`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from cogcli.compaction.estimate import CHARS_PER_TOKEN, estimate_image, estimate_message, estimate_text
from cogcli.wire.events import DroppedResult
from cogcli.project.instructions import instruction_note
from cogcli.models.base import Message, ToolCallRequest

if TYPE_CHECKING:
    from cogcli.contract.tool import Tool

log = logging.getLogger("cogcli")

#: a result shorter than this (in estimated tokens) is not worth a stub
MIN_DROP_TOKENS = 60
STUB_MARK = ": dropped to save context;"


def short_text(value: Any, limit: int = 60) -> str:
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
        what += " " + short_text(rest)
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
        sizes = [(_weight(history[k]), k) for k in range(start + 1, end)]
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
            out[k] = message.model_copy(update={"content": stub, "images": []})
            gain = int((before - estimate_message(out[k])) * ratio)
            saved += gain
            dropped.append(DroppedResult(tool_call_id=message.tool_call_id or "", tool_name=name, stub=stub.split("\n", 1)[0], tokens=int(before * ratio)))
    return out, dropped, saved


def _weight(message: Message) -> float:
    """A result's size in characters, its images counted as the text of as many tokens."""
    return len(message.content) + sum(estimate_image(i.width, i.height) for i in message.images) * CHARS_PER_TOKEN


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
