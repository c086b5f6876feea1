"""Anthropic Messages API client with streaming tool use.

One streaming POST to ``{base_url}/v1/messages`` per turn. The stream is ``message_start``,
then per content block ``content_block_start`` / ``_delta`` (``text_delta``, ``input_json_delta``) /
``_stop``, then ``message_delta`` (stop reason, output tokens) and ``message_stop``; ``ping`` may
come anywhere and ``error`` ends the turn.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from cogcli.errors import ContextLengthError, ModelError
from cogcli.models.context import context_overflow
from cogcli.models.base import (
    Message,
    ModelStreamEvent,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
    UsageReport,
)
from cogcli.models.sse import HttpModel, RetryableError, RetryPolicy, post_sse

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_TIMEOUT = 120.0
#: error types of an in-stream ``error`` event that a retry may cure
_RETRYABLE_ERRORS = {"overloaded_error", "api_error", "rate_limit_error"}


def _tool_input(arguments: Any) -> dict[str, Any]:
    """Anthropic wants a call's input as an object; text that is not a JSON object becomes ``{}``."""
    if isinstance(arguments, dict):
        return arguments
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def to_anthropic_messages(messages: Sequence[Message]) -> tuple[str | None, list[dict[str, Any]]]:
    """Our history as ``(system, messages)``: system messages joined into the top-level ``system``,
    assistant calls as ``tool_use`` blocks, tool results as ``tool_result`` blocks of a user
    message; consecutive user-side messages are merged so roles alternate."""
    system: list[str] = []
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system":
            if m.content:
                system.append(m.content)
        elif m.role == "user":
            add("user", [{"type": "text", "text": m.content}] if m.content else [])
        elif m.role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content}])
        else:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c.arguments)} for c in m.tool_calls]
            add("assistant", blocks)
    return ("\n\n".join(system) or None), out


def to_anthropic_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [{"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools]


class AnthropicModel(HttpModel):
    """A :class:`~cogcli.models.base.Model` over the Anthropic Messages API."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        name: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.model = model
        self.name = name or f"anthropic:{model}"
        base = base_url.rstrip("/")
        self.base_url = base[: -len("/v1")] if base.endswith("/v1") else base
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_tokens = max_tokens
        self._api_key = api_key
        self._client: httpx.AsyncClient | None = None

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        system, converted = to_anthropic_messages(messages)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": converted, "stream": True}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = to_anthropic_tools(tools)
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", "anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    async def _attempt(self, body: dict[str, Any]) -> AsyncIterator[ModelStreamEvent]:
        blocks: dict[int, dict[str, Any]] = {}  # index -> {"type", "id", "name", "text"}
        input_tokens = output_tokens = cached_tokens = 0
        stop_reason: str | None = None
        stopped = False
        stream = post_sse(
            self._http(), self.url, headers=self._headers(), body=body,
            secrets=(self._api_key,), auth_hint="check ANTHROPIC_API_KEY", label=self.name,
        )
        async with aclosing(stream) as events:  # the response is closed even when the loop stops early ([DONE], an error)
            async for sse in events:
                try:
                    data = sse.json()
                except ValueError:
                    raise RetryableError(f"unreadable stream event from {self.url}: {sse.data[:200]!r}") from None
                kind = data.get("type", sse.event) if isinstance(data, dict) else sse.event
                if kind == "message_start":
                    u = (data.get("message") or {}).get("usage") or {}
                    input_tokens = sum(int(u.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
                    cached_tokens = int(u.get("cache_read_input_tokens") or 0)
                    output_tokens = int(u.get("output_tokens") or 0)
                elif kind == "content_block_start":
                    block = data.get("content_block") or {}
                    state = {"type": block.get("type"), "id": block.get("id", ""), "name": block.get("name", ""), "parts": []}
                    blocks[int(data.get("index", len(blocks)))] = state
                    if state["type"] == "text" and block.get("text"):
                        yield TextDelta(text=block["text"])
                    elif state["type"] == "tool_use":
                        yield ToolCallStarted(id=state["id"], name=state["name"])
                elif kind == "content_block_delta":
                    delta = data.get("delta") or {}
                    state = blocks.get(int(data.get("index", -1)))
                    if delta.get("type") == "text_delta" and delta.get("text"):
                        yield TextDelta(text=delta["text"])
                    elif delta.get("type") == "input_json_delta" and state is not None and delta.get("partial_json"):
                        state["parts"].append(delta["partial_json"])  # joined at the block's end, not copied per fragment
                        yield ToolCallArgsDelta(id=state["id"], text=delta["partial_json"])
                elif kind == "content_block_stop":
                    state = blocks.get(int(data.get("index", -1)))
                    if state is not None and state["type"] == "tool_use":
                        text = "".join(state["parts"])
                        if not text:
                            text = "{}"
                            yield ToolCallArgsDelta(id=state["id"], text="{}")
                        yield ToolCallFinished(id=state["id"], name=state["name"], arguments_text=text)
                elif kind == "message_delta":
                    stop_reason = (data.get("delta") or {}).get("stop_reason") or stop_reason
                    u = data.get("usage") or {}
                    if u.get("output_tokens") is not None:
                        output_tokens = int(u["output_tokens"])
                elif kind == "message_stop":
                    stopped = True
                    break
                elif kind == "error":
                    err = data.get("error") or {}
                    what = f"{err.get('type', 'error')}: {err.get('message', '')}"
                    if err.get("type") in _RETRYABLE_ERRORS:
                        raise RetryableError(f"server error in stream: {what}")
                    overflow = context_overflow(0, data)
                    if overflow is not None:
                        raise ContextLengthError(f"{self.name}: server error in stream: {what}", limit=overflow.limit, tokens=overflow.tokens)
                    raise ModelError(f"{self.name}: server error in stream: {what}")
                # ping and unknown event types are skipped
        if not stopped:
            raise RetryableError(f"the stream from {self.url} ended before message_stop")
        yield UsageReport(input_tokens=input_tokens, output_tokens=output_tokens, cached_input_tokens=cached_tokens)
        yield TurnFinished(stop_reason=stop_reason or "end_turn")
