"""Anthropic Messages API client with streaming tool use.

One streaming POST to ``{base_url}/v1/messages`` per turn. The stream is ``message_start``,
then per content block ``content_block_start`` / ``_delta`` (``text_delta``, ``input_json_delta``) /
``_stop`` (``thinking_delta`` / ``signature_delta`` and ``redacted_thinking`` blocks with
``--reasoning``: :mod:`cogcli.models.anthropic_thinking`), then ``message_delta`` (stop reason, output tokens) and ``message_stop``; ``ping`` may
come anywhere and ``error`` ends the turn.

Prompt caching: each request marks at most :data:`MAX_BREAKPOINTS` prefixes with
``cache_control`` (:func:`place_breakpoints`): the last tool definition, the system prompt, and two
sliding ones on the newest messages — the end of the history (written for the next request) and
the end of the history the previous request sent (read back exactly, however many blocks the
newest turn added: Anthropic looks back only :data:`LOOKBACK_BLOCKS` blocks from a breakpoint for an
earlier cached prefix). A prefix shorter than the model's minimum (:func:`cache_minimum`) is
never cached by Anthropic, so it gets no breakpoint; nor does a request without tools (a
compaction's summary, a commit message: one-offs whose cache write, at 1.25× the input price,
would never be read). ``cache_ttl="1h"`` asks for the 1-hour cache
(writes billed 2× the input price instead of 1.25×).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from cogcli.models.tokens import estimate_text
from cogcli.contract.errors import ContextLengthError, ModelError
from cogcli.contract.output import ImagePart
from cogcli.models.context import context_overflow
from cogcli.models.anthropic_thinking import ThinkingBlock, adaptive_thinking, blocks_of, thinking_budget, thinking_headers, thinking_params
from cogcli.models.base import (
    Message,
    ModelStreamEvent,
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

DEFAULT_BASE_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 8192
DEFAULT_TIMEOUT = 120.0
#: error types of an in-stream ``error`` event that a retry may cure
_RETRYABLE_ERRORS = {"overloaded_error", "api_error", "rate_limit_error"}
#: the most ``cache_control`` breakpoints one request may carry (the API answers 400 beyond)
MAX_BREAKPOINTS = 4
#: how many blocks before a breakpoint Anthropic looks for an earlier cached prefix
LOOKBACK_BLOCKS = 20
#: the shortest prefix Anthropic caches, by model family (tokens)
CACHE_MINIMUM = 1024
CACHE_MINIMUM_HAIKU = 2048
CACHE_TTLS = ("5m", "1h")


def cache_minimum(model: str) -> int:
    """The shortest prefix the model caches: 2,048 tokens for Haiku models, 1,024 for Sonnet and Opus."""
    return CACHE_MINIMUM_HAIKU if "haiku" in model.lower() else CACHE_MINIMUM


def _block_tokens(block: dict[str, Any]) -> int:
    return estimate_text(json.dumps(block, ensure_ascii=False, separators=(",", ":")))


def place_breakpoints(body: dict[str, Any], *, minimum: int = CACHE_MINIMUM, ttl: str = "5m") -> list[tuple[str, int]]:
    """Mark the request ``body`` (``tools``, ``system``, ``messages`` as sent) with at most
    :data:`MAX_BREAKPOINTS` ``cache_control`` breakpoints, in place, and return where they went:
    ``("tools", i)``, ``("system", 0)`` or ``("messages", i)`` (the message's last block).

    The sliding ones: the last block of the history, and the last block of the user message
    before the newest assistant turn (where the previous request's history ended, so this one
    reads it back whole). A prefix under ``minimum`` estimated tokens
    (:func:`~cogcli.models.tokens.estimate_text`) gets none: Anthropic would not cache it."""
    control: dict[str, Any] = {"type": "ephemeral"} if ttl == "5m" else {"type": "ephemeral", "ttl": ttl}
    tools: list[dict[str, Any]] = body.get("tools") or []
    messages: list[dict[str, Any]] = body.get("messages") or []
    tools_end = sum(_block_tokens(t) for t in tools)
    system = body.get("system")
    system_end = tools_end + (estimate_text(system) if isinstance(system, str) else 0)
    # the prefix tokens at the end of each message (tools, system and every message before it)
    ends: list[int] = []
    total = system_end
    for m in messages:
        total += 4 + sum(_block_tokens(b) for b in m["content"])
        ends.append(total)

    wanted: list[tuple[str, int, int]] = []  # (where, index, prefix tokens), most valuable first
    if messages:
        wanted.append(("messages", len(messages) - 1, ends[-1]))
        last_assistant = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=None)
        if last_assistant is not None and last_assistant > 0:
            wanted.append(("messages", last_assistant - 1, ends[last_assistant - 1]))
    if isinstance(system, str) and system:
        wanted.append(("system", 0, system_end))
    if tools:
        wanted.append(("tools", len(tools) - 1, tools_end))
    placed: list[tuple[str, int]] = []
    for where, index, tokens in wanted:
        if tokens < minimum or (where, index) in placed or len(placed) >= MAX_BREAKPOINTS:
            continue
        placed.append((where, index))
        if where == "tools":
            tools[index] = {**tools[index], "cache_control": control}
        elif where == "system":
            body["system"] = [{"type": "text", "text": system, "cache_control": control}]
        else:
            blocks = messages[index]["content"]
            blocks[-1] = {**blocks[-1], "cache_control": control}
    return placed


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


def to_anthropic_messages(messages: Sequence[Message], *, thinking: bool = False) -> tuple[str | None, list[dict[str, Any]]]:
    """Our history as ``(system, messages)``: system messages joined into the top-level ``system``,
    assistant calls as ``tool_use`` blocks, tool results as ``tool_result`` blocks of a user
    message; consecutive user-side messages are merged so roles alternate. With ``thinking``, an
    assistant turn's thinking blocks go first in its message, verbatim."""
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
        elif m.role == "user":  # images first, as Anthropic advises
            add("user", [*(_image_block(image) for image in m.images), *([{"type": "text", "text": m.content}] if m.content else [])])
        elif m.role == "tool":
            content: Any = m.content
            if m.images:  # a tool_result holds text and image blocks
                content = [{"type": "text", "text": m.content}, *(_image_block(image) for image in m.images)]
            add("user", [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": content}])
        else:
            blocks: list[dict[str, Any]] = blocks_of(m.reasoning) if thinking and (m.content or m.tool_calls) else []
            blocks += [{"type": "text", "text": m.content}] if m.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": _tool_input(c.arguments)} for c in m.tool_calls]
            add("assistant", blocks)
    return ("\n\n".join(system) or None), out


def _image_block(image: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": image.media_type, "data": image.data}}


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
        cache: bool = True,
        cache_ttl: str = "5m",
        prices: dict[str, Price] | None = None,
        reasoning: str | None = None,
        vision: str | None = None,
    ) -> None:
        """``vision`` (auto, on, off: :func:`cogcli.models.vision.sees_images`) whether images are sent;
        ``reasoning`` (off, low, medium, high) asks for extended thinking: the level's budget,
        or adaptive thinking at that effort on a model that takes it (:mod:`cogcli.models.anthropic_thinking`); ``cache`` marks prefixes for Anthropic's prompt cache (:func:`place_breakpoints`);
        ``cache_ttl`` is ``"5m"`` (default) or ``"1h"``; ``prices`` adds to or overrides
        :data:`cogcli.settings.prices.PRICES` for the cost in each usage report."""
        if cache_ttl not in CACHE_TTLS:
            raise ValueError(f"cache_ttl must be one of {', '.join(CACHE_TTLS)}, got {cache_ttl!r}")
        self.model = model
        self.name = name or f"anthropic:{model}"
        base = base_url.rstrip("/")
        self.base_url = base[: -len("/v1")] if base.endswith("/v1") else base
        self.retry = retry or RetryPolicy()
        self.timeout = timeout
        self.max_tokens = max_tokens
        self.cache = cache
        self.cache_ttl = cache_ttl
        self.prices = prices
        self.reasoning = reasoning
        self.thinking_budget = thinking_budget(reasoning)
        self.sees_images = sees_images(model, vision)
        self._api_key = api_key
        self._client: httpx.AsyncClient | None = None

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        sent = messages if self.sees_images else without_images(messages)
        system, converted = to_anthropic_messages(sent, thinking=self.thinking_budget is not None)
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "messages": converted, "stream": True}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = to_anthropic_tools(tools)
        if self.thinking_budget is not None:
            thinking_params(body, self.thinking_budget, effort=self.reasoning if adaptive_thinking(self.model) else None)
        if self.cache and tools:  # a request without tools is a one-off (a summary, a commit message): a write it never reads costs 1.25×
            place_breakpoints(body, minimum=cache_minimum(self.model), ttl=self.cache_ttl)
        return body

    def usage_report(self, usage: dict[str, Any], output_tokens: int) -> UsageReport:
        """The turn's usage from the stream's ``usage`` fields: ``input_tokens`` (the uncached
        rest), ``cache_creation_input_tokens``, ``cache_read_input_tokens`` (and the split of the
        writes by TTL in ``cache_creation``), priced with :mod:`cogcli.settings.prices`."""
        from cogcli.settings.prices import cost_usd, price_of

        def count(key: str, where: dict[str, Any] = usage) -> int:
            return token_count(where.get(key))

        read, write = count("cache_read_input_tokens"), count("cache_creation_input_tokens")
        total = count("input_tokens") + read + write
        split = usage.get("cache_creation") if isinstance(usage.get("cache_creation"), dict) else {}
        write_1h = count("ephemeral_1h_input_tokens", split) if split else (write if self.cache_ttl == "1h" else 0)
        cost = cost_usd(
            price_of(self.name, self.prices), input_tokens=total, output_tokens=output_tokens,
            cache_read_tokens=read, cache_write_tokens=write, cache_write_1h_tokens=write_1h,
        )
        reported_write = write if usage.get("cache_creation_input_tokens") is not None else None  # None: it did not say
        details = usage.get("output_tokens_details") if isinstance(usage.get("output_tokens_details"), dict) else {}
        thinking = count("thinking_tokens", details) if details.get("thinking_tokens") is not None else None  # part of output_tokens
        return UsageReport(input_tokens=total, output_tokens=output_tokens, cached_input_tokens=read, cache_write_tokens=reported_write,
                           reasoning_tokens=thinking, cost_usd=cost)

    def _headers(self) -> dict[str, str]:
        headers = {"accept": "text/event-stream", "anthropic-version": ANTHROPIC_VERSION}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    async def _attempt(self, body: dict[str, Any]) -> AsyncIterator[ModelStreamEvent]:
        blocks: dict[int, dict[str, Any]] = {}  # index -> {"type", "id", "name", "text"}
        thoughts: dict[int, ThinkingBlock] = {}  # index -> a thinking / redacted_thinking block
        usage: dict[str, Any] = {}
        output_tokens = 0
        stop_reason: str | None = None
        stopped = False
        stream = post_sse(
            self._http(), self.url, headers=self._headers() | thinking_headers(body), body=body,
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
                    usage = dict(u) if isinstance(u, dict) else {}
                    output_tokens = int(usage.get("output_tokens") or 0)
                elif kind == "content_block_start":
                    block = data.get("content_block") or {}
                    if block.get("type") in ("thinking", "redacted_thinking"):
                        thought = thoughts[int(data.get("index", len(blocks)))] = ThinkingBlock(block)
                        if thought.parts:
                            yield ReasoningDelta(text=thought.parts[0])
                    state = {"type": block.get("type"), "id": block.get("id", ""), "name": block.get("name", ""), "parts": []}
                    blocks[int(data.get("index", len(blocks)))] = state
                    if state["type"] == "text" and block.get("text"):
                        yield TextDelta(text=block["text"])
                    elif state["type"] == "tool_use":
                        yield ToolCallStarted(id=state["id"], name=state["name"])
                elif kind == "content_block_delta":
                    delta = data.get("delta") or {}
                    state = blocks.get(int(data.get("index", -1)))
                    thought = thoughts.get(int(data.get("index", -1)))
                    if thought is not None:
                        shown = thought.add(delta)
                        if shown:
                            yield ReasoningDelta(text=shown)
                    elif delta.get("type") == "text_delta" and delta.get("text"):
                        yield TextDelta(text=delta["text"])
                    elif delta.get("type") == "input_json_delta" and state is not None and delta.get("partial_json"):
                        state["parts"].append(delta["partial_json"])  # joined at the block's end, not copied per fragment
                        yield ToolCallArgsDelta(id=state["id"], text=delta["partial_json"])
                elif kind == "content_block_stop":
                    state = blocks.get(int(data.get("index", -1)))
                    thought = thoughts.pop(int(data.get("index", -1)), None)
                    if thought is not None:
                        yield ReasoningFinished(block=thought.block())
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
                    # newer streams repeat the (cumulative) input counts here: they win when present
                    usage.update({k: v for k, v in u.items() if k != "output_tokens" and v is not None})
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
        yield self.usage_report(usage, output_tokens)
        yield TurnFinished(stop_reason=stop_reason or "end_turn")
