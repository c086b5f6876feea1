"""OpenAI-compatible Chat Completions client (OpenAI, Ollama, vLLM, llama.cpp, LM Studio, OpenRouter).

One streaming POST to ``{base_url}/chat/completions`` per turn, with ``stream_options.include_usage``.
Tool-call argument text arrives in fragments keyed by ``index`` (several calls may interleave);
each call is finished once the server says the turn is over.

Prompt caching: OpenAI (and vLLM, DeepSeek, …) cache the longest prefix a request shares with an
earlier one, automatically. So the body puts what never changes first — ``tools``, then the
messages, system prompt first — serialized the same way every time, and the history is only
ever appended to (compaction aside: :mod:`cogcli.compaction`). ``prompt_cache_key`` (the thread id,
from :data:`cogcli.models.base.PROMPT_CACHE_KEY`) routes a thread's requests to the same cache; it
is sent to api.openai.com by default, to other servers only with ``prompt_cache_key=True``, and a
server that refuses it as an unknown field is asked again without it (and not sent it again).
The cached part comes back as ``usage.prompt_tokens_details.cached_tokens`` (DeepSeek:
``prompt_cache_hit_tokens``).

Reasoning: with ``--reasoning low|medium|high`` the body carries ``reasoning_effort`` (OpenAI's
o-series and GPT-5, vLLM, Ollama, OpenRouter and others take it; "off" sends nothing). Servers
that stream a reasoning model's thinking put it in ``delta.reasoning_content`` (vLLM, DeepSeek,
llama.cpp) or ``delta.reasoning`` (Ollama, OpenRouter); either is shown as it streams
(``ReasoningDelta``) and kept whole (``ReasoningFinished``, format ``"openai-chat"``) in the
history and the thread, whether or not ``reasoning_effort`` was sent. It is never sent back:
Chat Completions has no field for it in a request (DeepSeek answers 400 to ``reasoning_content``
in an input message), and OpenAI's own reasoning is kept between turns only by the Responses API.
Reasoning tokens are part of ``completion_tokens`` (``completion_tokens_details.reasoning_tokens``),
so usage, cost and ``--max-tokens`` count them.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cogcli.contract.errors import ModelError
from cogcli.contract.output import ImagePart
from cogcli.models.base import (
    PROMPT_CACHE_KEY,
    Message,
    ModelStreamEvent,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
    UsageReport,
    token_count,
)
from cogcli.models.sse import HttpModel, RetryableError, RetryPolicy, post_sse
from cogcli.models.vision import sees_images, without_images

if TYPE_CHECKING:
    import httpx

    from cogcli.settings.prices import Price

log = logging.getLogger("cogcli.models")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_TIMEOUT = 120.0


def arguments_json(arguments: Any) -> str:
    """A call's arguments as the JSON text a provider expects (raw text is sent as it came)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Our history in Chat Completions form: assistant tool calls as ``tool_calls``, results as ``role: tool``.

    Images: a user message's go in its content as ``image_url`` parts (data URLs). A ``tool``
    message can carry only text, so the images a call read follow the turn's tool messages in one
    ``user`` message, each after a text naming the call it belongs to."""
    out: list[dict[str, Any]] = []
    seen: list[dict[str, Any]] = []  # the parts of the images this turn's calls read, sent after its tool messages

    def flush() -> None:
        if seen:
            out.append({"role": "user", "content": list(seen)})
            seen.clear()

    for m in messages:
        if m.role != "tool":
            flush()
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
            for image in m.images:
                seen.append({"type": "text", "text": f"The image {image.name or 'attached'} that the {m.name or 'tool'} call {m.tool_call_id or ''} returned:"})
                seen.append(_image_url(image))
        else:
            msg = {"role": m.role, "content": m.content}
            if m.images and m.role == "user":
                msg["content"] = [{"type": "text", "text": m.content}, *(_image_url(image) for image in m.images)]
            if m.name and m.role == "user":
                msg["name"] = m.name
            out.append(msg)
    flush()
    return out


def _image_url(image: ImagePart) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": image.data_url()}}


def to_openai_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    return [
        {"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}}
        for t in tools
    ]


def _reasoning_block(parts: list[str]) -> ReasoningFinished:
    """The reasoning streamed so far as one whole block (``parts`` emptied for the next)."""
    block = ReasoningFinished(block=Reasoning(format="openai-chat", kind="reasoning_content", text="".join(parts)))
    parts.clear()
    return block


@dataclass
class _Call:
    """A tool call being streamed, put together from its deltas."""
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
        prompt_cache_key: bool | None = None,
        prices: dict[str, Price] | None = None,
        reasoning: str | None = None,
        vision: str | None = None,
    ) -> None:
        """``reasoning`` (low, medium, high) is sent as ``reasoning_effort`` (off or None: not sent);
        ``vision`` (auto, on, off: :func:`cogcli.models.vision.sees_images`) whether images are sent;
        ``prompt_cache_key``: send the thread id as ``prompt_cache_key`` (None: only to
        api.openai.com, which documents it); ``prices`` adds to or overrides
        :data:`cogcli.settings.prices.PRICES` for the cost in each usage report."""
        self.model = model
        self.name = name or f"openai:{model}"
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self._api_key = api_key
        self._auth_hint = auth_hint
        self.prices = prices
        self.reasoning = reasoning if reasoning not in (None, "", "off") else None
        self.sees_images = sees_images(model, vision)
        if prompt_cache_key is None:
            from urllib.parse import urlsplit

            prompt_cache_key = urlsplit(self.base_url).hostname == "api.openai.com"
        self.prompt_cache_key = prompt_cache_key
        self._client: httpx.AsyncClient | None = None

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        # what never changes first (tools), then the history, system prompt first: the same
        # bytes every request, so the provider's prefix cache matches the longest part it can
        body: dict[str, Any] = {"model": self.model}
        if tools:
            body["tools"] = to_openai_tools(tools)
        body["messages"] = to_openai_messages(messages if self.sees_images else without_images(messages))
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if self.reasoning is not None:
            body["reasoning_effort"] = self.reasoning
        key = PROMPT_CACHE_KEY.get()
        if self.prompt_cache_key and key:
            body["prompt_cache_key"] = key
        return body

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        body = self.request_body(messages, tools)
        started = False
        try:
            async for event in super()._stream_body(body):
                started = True
                yield event
        except ModelError as exc:
            if started or "prompt_cache_key" not in body or "prompt_cache_key" not in exc.message:
                raise
            # a compatible server that takes no unknown fields: without the key, from now on
            log.info("%s refused prompt_cache_key (%s); sending requests without it", self.name, exc.message)
            self.prompt_cache_key = False
            del body["prompt_cache_key"]
            async for event in super()._stream_body(body):
                yield event

    def usage_report(self, u: dict[str, Any]) -> UsageReport:
        """A ``usage`` object as a report: ``prompt_tokens`` (cached included),
        ``completion_tokens``, the cached part from ``prompt_tokens_details.cached_tokens``
        (DeepSeek: ``prompt_cache_hit_tokens``), priced with :mod:`cogcli.settings.prices`."""
        from cogcli.settings.prices import cost_usd, price_of

        details = u.get("prompt_tokens_details")
        cached = token_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
        cached = cached or token_count(u.get("prompt_cache_hit_tokens"))
        prompt, completion = token_count(u.get("prompt_tokens")), token_count(u.get("completion_tokens"))
        out_details = u.get("completion_tokens_details")
        reasoning = token_count(out_details.get("reasoning_tokens")) if isinstance(out_details, dict) else 0
        cost = cost_usd(price_of(self.name, self.prices), input_tokens=prompt, output_tokens=completion, cache_read_tokens=cached)
        return UsageReport(input_tokens=prompt, output_tokens=completion, cached_input_tokens=min(cached, prompt),
                           reasoning_tokens=reasoning or None, cost_usd=cost)

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
        thinking: list[str] = []  # the reasoning text of the block streaming now
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
                if isinstance(chunk.get("usage"), dict):  # the last chunk (choices: []), or the finishing one
                    usage = self.usage_report(chunk["usage"])
                for choice in chunk.get("choices") or []:
                    delta = choice.get("delta") or {}
                    reasoning = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(reasoning, str) and reasoning:
                        thinking.append(reasoning)
                        yield ReasoningDelta(text=reasoning)
                    if thinking and (delta.get("content") or delta.get("tool_calls")):  # the answer begins: the block is whole
                        yield _reasoning_block(thinking)
                    if delta.get("content"):
                        yield TextDelta(text=delta["content"])
                    for frag in delta.get("tool_calls") or []:
                        for event in self._on_fragment(calls, frag, turn):
                            yield event
                    if choice.get("finish_reason"):
                        finish_reason = choice["finish_reason"]
        if not done and finish_reason is None:
            raise RetryableError(f"the stream from {self.url} ended before the turn finished")
        if thinking:
            yield _reasoning_block(thinking)
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
