"""OpenAI-compatible Chat Completions client (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter).

One streaming POST to ``{base_url}/chat/completions`` per turn, with ``stream_options.include_usage``.
Tool-call argument text arrives in fragments keyed by ``index`` (several calls may interleave);
each call is finished once the server says the turn is over.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 120.0


def arguments_json(arguments: Any) -> str:
    """A call's arguments as the JSON text a provider expects (raw text is sent as it came)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our history in Chat Completions form: assistant tool calls as ``tool_calls``, results as ``role: tool``."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            msg: dict[str, Any] = {"role": "assistant", "content": m.content or None}
            if m.tool_calls:
                msg["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments_json(c.arguments)}}
                    for c in m.tool_calls
                ]
            elif not m.content:
                msg["content"] = ""
            out.append(msg)
        elif m.role == "tool":
            out.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.content})
        else:
            msg = {"role": m.role, "content": m.content}
            if m.name and m.role == "user":
                msg["name"] = m.name
            out.append(msg)
    return out


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


@dataclass
class _Call:
    index: int
    id: str = ""
    name: str = ""
    #: argument fragments, joined once the turn ends (appending to a str would copy it each time)
    parts: list[str] = field(default_factory=list)
    started: bool = False
    pending: list[str] = field(default_factory=list)


class OpenAIModel(HttpModel):
    """A :class:`~cogcli.models.base.Model` over any OpenAI-compatible ``/chat/completions``."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str = DEFAULT_BASE_URL,
        api_key: str | None = None,
        name: str | None = None,
        retry: RetryPolicy | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        auth_hint: str = "check OPENAI_API_KEY",
    ) -> None:
        self.model = model
        self.name = name or f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._api_key = api_key
        self._auth_hint = auth_hint
        self._client: httpx.AsyncClient | None = None

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = to_openai_tools(tools)
        return body

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "text/event-stream"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        return headers

    async def _attempt(self, body: dict[str, Any]) -> AsyncIterator[ModelStreamEvent]:
        calls: dict[int, _Call] = {}
        finish_reason: str | None = None
        usage: UsageReport | None = None
        done = False
        turn = uuid.uuid4().hex[:8]
        stream = post_sse(
            self._http(), self.url, headers=self._headers(), body=body,
            secrets=(self._api_key,), auth_hint=self._auth_hint, label=self.name,
        )
        async with aclosing(stream) as events:  # the response is closed even when the loop stops early ([DONE], an error)
            async for sse in events:
                if sse.data.strip() == "[DONE]":
                    done = True
                    break
                try:
                    chunk = sse.json()
                except ValueError:
                    raise RetryableError(f"unreadable stream chunk from {self.url}: {sse.data[:200]!r}") from None
                if not isinstance(chunk, dict):
                    continue
                if chunk.get("error"):
                    err = chunk["error"]
                    message = err.get("message", err) if isinstance(err, dict) else err
                    raise RetryableError(f"server error in stream: {message}")
                if isinstance(chunk.get("usage"), dict):
                    u = chunk["usage"]
                    cached = (u.get("prompt_tokens_details") or {}).get("cached_tokens") if isinstance(u.get("prompt_tokens_details"), dict) else None
                    usage = UsageReport(
                        input_tokens=int(u.get("prompt_tokens") or 0),
                        output_tokens=int(u.get("completion_tokens") or 0),
                        cached_input_tokens=int(cached or 0),
                    )
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    if delta.get("content"):
                        yield TextDelta(text=delta["content"])
                    for frag in delta.get("tool_calls") or []:
                        for event in self._on_fragment(calls, frag, turn):
                            yield event
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
        if not done and finish_reason is None:
            raise RetryableError(f"the stream from {self.url} ended before the turn finished")
        for call in sorted(calls.values(), key=lambda c: c.index):
            if not call.started:  # arguments without a name: finish it under an empty name, the run reports it
                call.started = True
                yield ToolCallStarted(id=call.id, name=call.name)
                for text in call.pending:
                    yield ToolCallArgsDelta(id=call.id, text=text)
            text = "".join(call.parts)
            if not text:
                text = "{}"
                yield ToolCallArgsDelta(id=call.id, text="{}")
            yield ToolCallFinished(id=call.id, name=call.name, arguments_text=text)
        if usage is not None:
            yield usage
        yield TurnFinished(stop_reason=finish_reason or "stop")

    @staticmethod
    def _on_fragment(calls: dict[int, _Call], frag: dict[str, Any], turn: str) -> list[ModelStreamEvent]:
        index = int(frag.get("index", len(calls)))
        call = calls.get(index)
        if call is None:
            call = calls[index] = _Call(index=index, id=frag.get("id") or f"call_{turn}_{index}")
        fn = frag.get("function") or {}
        if fn.get("name") and not call.name:
            call.name = fn["name"]
        out: list[ModelStreamEvent] = []
        if not call.started and call.name:
            call.started = True
            out.append(ToolCallStarted(id=call.id, name=call.name))
            out.extend(ToolCallArgsDelta(id=call.id, text=t) for t in call.pending)
            call.pending.clear()
        text = fn.get("arguments") or ""
        if text:
            call.parts.append(text)
            if call.started:
                out.append(ToolCallArgsDelta(id=call.id, text=text))
            else:
                call.pending.append(text)
        return out
