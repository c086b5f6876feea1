"""OpenAI's Responses API client: ``openai:`` at api.openai.com (and any server the person says
speaks it: ``[providers.openai] api = "responses"``, ``COG_OPENAI_API=responses``).

One streaming POST to ``{base_url}/responses`` per turn with ``store: false`` (OpenAI keeps
nothing: the whole history goes with every request, :mod:`cogcli.models.responses_items`), the
same ``prompt_cache_key``, retries, context-length errors and prices as the Chat Completions client
(:class:`~cogcli.models.openai.OpenAIModel`, which this one extends). The stream's events:

- ``response.output_item.added`` — a ``function_call`` starts (``ToolCallStarted``), or an
  ``apply_patch_call`` (a call of cog's ``apply_patch``);
- ``response.output_text.delta`` (and ``response.refusal.delta``) — text;
- ``response.function_call_arguments.delta`` — a call's argument text;
- ``response.reasoning_summary_text.delta`` (``response.reasoning_text.delta`` from servers that
  stream the raw reasoning) — the reasoning shown as it streams;
- ``response.output_item.done`` — an item whole: a call's arguments (an ``apply_patch_call``'s
  operation), a ``reasoning`` item kept as it came (``ReasoningFinished``, format
  ``"openai-responses"``: ``id``, summary parts, ``encrypted_content``);
- ``response.completed`` / ``response.incomplete`` — usage (``input_tokens`` with
  ``input_tokens_details.cached_tokens``, ``output_tokens`` with
  ``output_tokens_details.reasoning_tokens``) and how the turn ended (``max_output_tokens`` is the
  output limit: ``stop_reason`` ``"length"``);
- ``response.failed`` / ``error`` — the turn fails: a context-length error
  (:class:`~cogcli.contract.errors.ContextLengthError`, the run compacts and tries once more), a
  retryable one (server error, rate limit, before anything was yielded) or a :class:`ModelError`.

Reasoning: ``--reasoning low|medium|high`` sends ``reasoning: {effort, summary: "auto"}``; for a
reasoning model (or any model asked to reason) the request includes ``reasoning.encrypted_content``,
and each reasoning item comes back encrypted, is kept verbatim in the history and the thread, and
is sent back first in its turn — the only way OpenAI's reasoning models keep their reasoning
between turns with ``store: false``. Reasoning tokens are output tokens: usage, cost and
``--max-tokens`` count them.

The native ``apply_patch`` tool: a model that knows it (:func:`~cogcli.models.responses_items.knows_apply_patch`)
is offered ``{"type": "apply_patch"}`` in place of cog's ``apply_patch`` function; each
``apply_patch_call`` it makes is a call of cog's ``apply_patch`` tool (through the same gate,
preview and approval), and its result goes back as ``apply_patch_call_output``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from cogcli.contract.errors import ContextLengthError, ModelError
from cogcli.models.base import (
    PROMPT_CACHE_KEY,
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
from cogcli.models.context import context_overflow
from cogcli.models.openai import OpenAIModel
from cogcli.models.responses_items import (
    APPLY_PATCH,
    knows_apply_patch,
    native_call_arguments,
    reasoning_block,
    reasons,
    to_input,
    to_tools,
)
from cogcli.models.sse import RetryableError, post_sse

log = logging.getLogger("cogcli.models")

#: error codes of a failed response (``response.failed``, ``error``) that a retry may cure
RETRYABLE_CODES = frozenset({"server_error", "rate_limit_exceeded", "server_is_overloaded", "slow_down"})
#: ``incomplete_details.reason`` → the stop reason the run reads (the output limit is ``length``)
INCOMPLETE_REASONS = {"max_output_tokens": "length", "content_filter": "content_filter"}


@dataclass
class _Call:
    """A call being streamed: its ``call_id`` (cog's call id), name and argument text."""

    call_id: str
    name: str
    parts: list[str] = field(default_factory=list)
    started: bool = False


class OpenAIResponsesModel(OpenAIModel):
    """A :class:`~cogcli.models.base.Model` over OpenAI's ``/responses`` (see the module's docstring)."""

    api = "responses"

    @property
    def url(self) -> str:
        return f"{self.base_url}/responses"

    @property
    def native_apply_patch(self) -> bool:
        """Whether ``apply_patch`` is offered as the Responses API's native tool."""
        return knows_apply_patch(self.model)

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        # what never changes first (tools, instructions), then the history: a stable prefix for the cache
        native = self.native_apply_patch and any(t.name == APPLY_PATCH for t in tools)
        from cogcli.models.vision import without_images

        instructions, items = to_input(messages if self.sees_images else without_images(messages), native_apply_patch=native)
        body: dict[str, Any] = {"model": self.model}
        if tools:
            body["tools"] = to_tools(tools, native_apply_patch=native)
        if instructions:
            body["instructions"] = instructions
        body["input"] = items
        body["stream"] = True
        body["store"] = False
        if self.reasoning is not None:
            body["reasoning"] = {"effort": self.reasoning, "summary": "auto"}
        if self.reasoning is not None or reasons(self.model):
            body["include"] = ["reasoning.encrypted_content"]
        key = PROMPT_CACHE_KEY.get()
        if self.prompt_cache_key and key:
            body["prompt_cache_key"] = key
        return body

    def usage_report(self, u: dict[str, Any]) -> UsageReport:
        """A response's ``usage`` as a report: ``input_tokens`` (cached included), ``output_tokens``
        (reasoning included), the cached part from ``input_tokens_details.cached_tokens``, priced
        with :mod:`cogcli.settings.prices`."""
        from cogcli.settings.prices import cost_usd, price_of

        details = u.get("input_tokens_details")
        cached = token_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
        out_details = u.get("output_tokens_details")
        reasoning = token_count(out_details.get("reasoning_tokens")) if isinstance(out_details, dict) else 0
        prompt, completion = token_count(u.get("input_tokens")), token_count(u.get("output_tokens"))
        cost = cost_usd(price_of(self.name, self.prices), input_tokens=prompt, output_tokens=completion, cache_read_tokens=cached)
        return UsageReport(input_tokens=prompt, output_tokens=completion, cached_input_tokens=min(cached, prompt),
                           reasoning_tokens=reasoning or None, cost_usd=cost)

    async def _attempt(self, body: dict[str, Any]) -> AsyncIterator[ModelStreamEvent]:
        calls: dict[str, _Call] = {}  # item id → the call it streams
        finished: list[_Call] = []
        usage: UsageReport | None = None
        stop: str | None = None
        summary_parts: dict[str, int] = {}  # reasoning item id → the summary parts shown
        stream = post_sse(
            self._http(), self.url, headers=self._headers(), body=body,
            secrets=(self._api_key,), auth_hint=self._auth_hint, label=self.name,
        )
        async with aclosing(stream) as events:  # the response is closed even when the loop stops early
            async for sse in events:
                try:
                    data = sse.json()
                except ValueError:
                    raise RetryableError(f"unreadable stream event from {self.url}: {sse.data[:200]!r}") from None
                if not isinstance(data, dict):
                    continue
                kind = data.get("type") or sse.event
                item = data.get("item") if isinstance(data.get("item"), dict) else {}
                if kind == "response.output_item.added":
                    call = self._call_of(item)
                    if call is not None:
                        calls[str(item.get("id") or call.call_id)] = call
                        call.started = True
                        yield ToolCallStarted(id=call.call_id, name=call.name)
                elif kind in ("response.output_text.delta", "response.refusal.delta"):
                    if data.get("delta"):
                        yield TextDelta(text=str(data["delta"]))
                elif kind == "response.function_call_arguments.delta":
                    call = calls.get(str(data.get("item_id")))
                    if call is not None and data.get("delta"):
                        call.parts.append(str(data["delta"]))
                        yield ToolCallArgsDelta(id=call.call_id, text=str(data["delta"]))
                elif kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
                    delta = str(data.get("delta") or "")
                    if kind.endswith("summary_text.delta"):
                        index = token_count(data.get("summary_index"))
                        seen = summary_parts.setdefault(str(data.get("item_id")), index)
                        if index != seen:  # a new part of the summary: shown after a blank line, as kept
                            summary_parts[str(data.get("item_id"))] = index
                            delta = "\n\n" + delta
                    if delta:
                        yield ReasoningDelta(text=delta)
                elif kind == "response.output_item.done":
                    for event in self._item_done(item, calls, finished):
                        yield event
                elif kind in ("response.completed", "response.incomplete"):
                    response = data.get("response") if isinstance(data.get("response"), dict) else {}
                    if isinstance(response.get("usage"), dict):
                        usage = self.usage_report(response["usage"])
                    reason = (response.get("incomplete_details") or {}).get("reason") if kind == "response.incomplete" else None
                    stop = INCOMPLETE_REASONS.get(str(reason), str(reason)) if reason else ("tool_calls" if finished else "stop")
                    break
                elif kind in ("response.failed", "error"):
                    response = data.get("response") if isinstance(data.get("response"), dict) else {}
                    nested = data.get("error") if isinstance(data.get("error"), dict) else data  # some servers nest it
                    self._fail(response.get("error") if kind == "response.failed" else nested)
                # response.created, .in_progress, content parts, *.done of text: nothing more to take
        if stop is None:
            raise RetryableError(f"the stream from {self.url} ended before the response completed")
        for call in calls.values():  # announced but never finished: finished with what streamed
            if call not in finished:
                yield ToolCallFinished(id=call.call_id, name=call.name, arguments_text="".join(call.parts) or "{}")
        if usage is not None:
            yield usage
        yield TurnFinished(stop_reason=stop)

    @staticmethod
    def _call_of(item: dict[str, Any]) -> _Call | None:
        if item.get("type") == "function_call":
            return _Call(call_id=str(item.get("call_id") or item.get("id") or ""), name=str(item.get("name") or ""))
        if item.get("type") == "apply_patch_call":
            return _Call(call_id=str(item.get("call_id") or item.get("id") or ""), name=APPLY_PATCH)
        return None

    def _item_done(self, item: dict[str, Any], calls: dict[str, _Call], finished: list[_Call]) -> list[ModelStreamEvent]:
        """The events of an item finished whole."""
        kind = item.get("type")
        if kind == "reasoning":
            return [ReasoningFinished(block=reasoning_block(item))]
        if kind not in ("function_call", "apply_patch_call"):
            return []
        out: list[ModelStreamEvent] = []
        key = str(item.get("id") or item.get("call_id") or "")
        call = calls.get(key)
        if call is None:  # never announced (a server that sends only the finished item)
            call = calls[key] = self._call_of(item) or _Call(call_id=key, name="")
        if not call.started:
            call.started = True
            out.append(ToolCallStarted(id=call.call_id, name=call.name))
        if kind == "apply_patch_call":
            text = native_call_arguments(item)
        else:
            text = str(item["arguments"]) if isinstance(item.get("arguments"), str) else "".join(call.parts)
        streamed = "".join(call.parts)
        if text != streamed and text.startswith(streamed):  # what the deltas did not carry (an apply_patch_call's operation comes whole)
            out.append(ToolCallArgsDelta(id=call.call_id, text=text[len(streamed):]))
        text = text or "{}"
        finished.append(call)
        out.append(ToolCallFinished(id=call.call_id, name=call.name, arguments_text=text))
        return out

    def _fail(self, error: Any) -> None:
        """Raise what a failed response (``response.failed``'s ``error``, an ``error`` event) is."""
        err = error if isinstance(error, dict) else {"message": str(error)}
        code = str(err.get("code") or err.get("type") or "error")
        what = f"{code}: {err.get('message', '')}"
        overflow = context_overflow(0, {"error": err})
        if overflow is not None:
            raise ContextLengthError(f"{self.name}: the response failed: {what}", limit=overflow.limit, tokens=overflow.tokens)
        if code in RETRYABLE_CODES:
            raise RetryableError(f"the response failed: {what}")
        raise ModelError(f"{self.name}: the response failed: {what}")

