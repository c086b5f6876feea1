"""The Responses API's items: cog's history as a request's ``input``, its tools, and the reasoning
and ``apply_patch`` items of a response as cog keeps them.

History → ``input`` (system messages become the request's ``instructions``):

- a user message: ``{"role": "user", "content": …}``;
- an assistant turn: its kept reasoning items first (:func:`reasoning_item`: ``id``, ``summary``,
  ``encrypted_content`` exactly as they came), then its text as an assistant message, then each
  call — a ``function_call`` (``call_id``, ``name``, ``arguments``), or, for a call of the native
  ``apply_patch`` tool, the ``apply_patch_call`` it was (``operation`` as the model wrote it);
- a tool result: ``function_call_output``, or ``apply_patch_call_output`` with ``status``
  ``failed`` when what the model read is an error (``Error: …``), ``completed`` otherwise.

A native ``apply_patch_call`` becomes a call of cog's own ``apply_patch`` tool whose arguments are
``{"operation": {"type", "path", "diff"}}``, the item's operation verbatim
(:func:`native_call_arguments`): the tool turns it into its patch with the same parser as any patch
(:func:`workspace_tools.text.patch_format.operation_patch`), and the thread keeps the call as the
model made it, so ``cog edit --thread`` sends the ``apply_patch_call`` back unchanged.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from cogcli.models.base import Message, Reasoning, ToolCallRequest, ToolSpec
from cogcli.contract.output import ImagePart

#: the format of the reasoning blocks the Responses client keeps and sends back
FORMAT = "openai-responses"
#: cog's tool the native ``apply_patch`` tool stands for
APPLY_PATCH = "apply_patch"
#: what a tool result the model read as an error starts with (:meth:`cogcli.contract.result.ToolResult.model_text`)
ERROR_PREFIX = "Error: "

_GPT = re.compile(r"^(?:ft:)?gpt-(\d+)(?:\.(\d+))?")


def model_name(model: str) -> str:
    """The bare model name, without a gateway's ``vendor/`` prefix, lower-cased."""
    return model.rsplit("/", 1)[-1].lower()


def knows_apply_patch(model: str) -> bool:
    """Whether the model knows the Responses API's native ``apply_patch`` tool: GPT-5.1 and later
    (``gpt-5.1``, ``gpt-5.1-codex``, ``gpt-5.2``, ``gpt-6``…). Others get cog's ``apply_patch`` as a
    function."""
    found = _GPT.match(model_name(model))
    if found is None:
        return False
    version = (int(found.group(1)), int(found.group(2) or 0))
    return version >= (5, 1)


def reasons(model: str) -> bool:
    """Whether the model is one of OpenAI's reasoning models (o-series, GPT-5 and later, codex,
    gpt-oss), which reason even when no effort is asked for: their reasoning items are kept."""
    name = model_name(model)
    if name.startswith(("o1", "o3", "o4", "codex", "gpt-oss")):
        return True
    found = _GPT.match(name)
    return found is not None and int(found.group(1)) >= 5


def to_tools(tools: Sequence[ToolSpec], *, native_apply_patch: bool) -> list[dict[str, Any]]:
    """The request's ``tools``: each as a function (``strict`` off: cog's schemas allow optional
    fields), ``apply_patch`` as the native tool when ``native_apply_patch``."""
    out: list[dict[str, Any]] = []
    for t in tools:
        if native_apply_patch and t.name == APPLY_PATCH:
            out.append({"type": "apply_patch"})
        else:
            out.append({"type": "function", "name": t.name, "description": t.description, "parameters": t.parameters, "strict": False})
    return out


def native_operation(call: ToolCallRequest) -> dict[str, Any] | None:
    """The ``apply_patch_call`` operation a call of cog's apply_patch stands for (None: a function call)."""
    arguments = call.arguments
    if call.name != APPLY_PATCH or not isinstance(arguments, dict) or set(arguments) != {"operation"}:
        return None
    operation = arguments["operation"]
    return operation if isinstance(operation, dict) else None


def native_call_arguments(item: dict[str, Any]) -> str:
    """The arguments text of cog's apply_patch call for an ``apply_patch_call`` item."""
    return json.dumps({"operation": item.get("operation")}, ensure_ascii=False)


def reasoning_block(item: dict[str, Any]) -> Reasoning:
    """A finished ``reasoning`` item as cog keeps it: the readable summary (its parts joined by
    blank lines) as ``text``, each part in ``summary``, ``encrypted_content`` as ``data``; the
    raw reasoning text (``content``, from servers that return it) in ``content``."""
    summary = [str(p.get("text", "")) for p in item.get("summary") or [] if isinstance(p, dict)]
    content = [str(p.get("text", "")) for p in item.get("content") or [] if isinstance(p, dict)]
    extra: dict[str, Any] = {"summary": summary}
    if content:
        extra["content"] = content
    text = "\n\n".join(s for s in summary if s) or "\n\n".join(c for c in content if c)
    return Reasoning(format=FORMAT, kind="reasoning", id=str(item.get("id") or ""), text=text,
                     data=item.get("encrypted_content"), **extra)


def reasoning_item(block: Reasoning) -> dict[str, Any] | None:
    """A kept block as the ``reasoning`` input item it came as; None when it cannot go back: another
    provider's, one cog altered (a credential redacted), or one without ``encrypted_content``
    (with ``store: false`` the API keeps nothing, so an item without it refers to nothing)."""
    if block.format != FORMAT or block.altered or not block.data or not block.id:
        return None
    extra = block.model_extra or {}
    summary = extra.get("summary")
    parts = summary if isinstance(summary, list) else ([block.text] if block.text else [])
    item: dict[str, Any] = {"type": "reasoning", "id": block.id, "summary": [{"type": "summary_text", "text": str(p)} for p in parts]}
    content = extra.get("content")
    if isinstance(content, list) and content:
        item["content"] = [{"type": "reasoning_text", "text": str(p)} for p in content]
    item["encrypted_content"] = block.data
    return item


def input_image(image: ImagePart) -> dict[str, Any]:
    """An image as the Responses API takes it: an ``input_image`` with a ``data:`` URL."""
    return {"type": "input_image", "image_url": image.data_url(), "detail": "auto"}


def to_input(messages: Sequence[Message], *, native_apply_patch: bool) -> tuple[str | None, list[dict[str, Any]]]:
    """``(instructions, input)``: the system messages joined, and the rest as input items."""
    from cogcli.models.openai import arguments_json

    system: list[str] = []
    items: list[dict[str, Any]] = []
    native: set[str] = set()  # the call ids of native apply_patch calls, whose results are their outputs
    for m in messages:
        if m.role == "system":
            if m.content:
                system.append(m.content)
        elif m.role == "user":
            content: Any = m.content
            if m.images:  # the person's images after the text
                content = [{"type": "input_text", "text": m.content}, *(input_image(image) for image in m.images)]
            items.append({"role": "user", "content": content})
        elif m.role == "tool":
            call_id = m.tool_call_id or ""
            if call_id in native:
                status = "failed" if m.content.startswith(ERROR_PREFIX) else "completed"
                items.append({"type": "apply_patch_call_output", "call_id": call_id, "status": status, "output": m.content})
            else:
                output: Any = m.content
                if m.images:  # a call's images in its own output, after its text
                    output = [{"type": "input_text", "text": m.content}, *(input_image(image) for image in m.images)]
                items.append({"type": "function_call_output", "call_id": call_id, "output": output})
        else:
            if m.content or m.tool_calls:  # a turn's reasoning goes back only with what followed it
                items.extend(item for block in m.reasoning if (item := reasoning_item(block)) is not None)
            if m.content:
                items.append({"type": "message", "role": "assistant", "content": m.content})
            for call in m.tool_calls:
                operation = native_operation(call) if native_apply_patch else None
                if operation is not None:
                    native.add(call.id)
                    items.append({"type": "apply_patch_call", "call_id": call.id, "status": "completed", "operation": operation})
                else:
                    items.append({"type": "function_call", "call_id": call.id, "name": call.name, "arguments": arguments_json(call.arguments)})
    return ("\n\n".join(system) or None), items
