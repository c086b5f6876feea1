"""Loopback model servers that bill like the providers' prompt caches, for tests and
``benchmarks/prompt_cache.py``.

They are :mod:`model_servers`' servers (the real streaming wire formats) whose replies report the
usage the provider's documented cache rules would give the request they answer:

- :class:`AnthropicCacheServer` — Anthropic's explicit cache: a prefix is cached only up to a
  block marked ``cache_control``; at most 4 such breakpoints (a 5th is answered HTTP 400, as the
  API does); each breakpoint looks back at most 20 blocks for an earlier cached prefix; a prefix
  under the model's minimum (1,024 tokens, 2,048 for Haiku) is not cached. The prefix runs
  tools → system → messages, a block at a time; ``cache_control`` itself is not part of it.
  Usage: ``input_tokens`` (after the last breakpoint), ``cache_creation_input_tokens``,
  ``cache_read_input_tokens``.
- :class:`OpenAICacheServer` — OpenAI's automatic cache: the longest prefix (of the tools, then
  the messages, as sent) that an earlier request shared, counted once it is at least 1,024
  tokens and then in 128-token steps. Usage: ``prompt_tokens_details.cached_tokens``.
  ``strict=True`` makes it a compatible server that refuses unknown fields (``prompt_cache_key``)
  with HTTP 400.

Tokens are counted 4 characters of JSON a token (:func:`tokens`), like :func:`model_servers.count_tokens`.
Both record, per request, what they billed in ``srv.bills`` (:class:`Bill`).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from model_servers import AnthropicServer, Fail, OpenAIServer, RecordedRequest, Reply, Script, Step

ANTHROPIC_MAX_BREAKPOINTS = 4
ANTHROPIC_LOOKBACK = 20
OPENAI_MIN_PREFIX = 1024
OPENAI_STEP = 128


def tokens(value: Any) -> int:
    """Tokens of a JSON value (or text): 4 characters a token, rounded up."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return -(-len(text) // 4)


@dataclass(frozen=True)
class Bill:
    """What one request read: ``total`` input tokens, of which ``read`` came from the cache and
    ``written`` went into it (the rest, ``total - read - written``, at the plain input price)."""

    total: int
    read: int
    written: int = 0


def anthropic_minimum(model: str) -> int:
    return 2048 if "haiku" in model.lower() else 1024


def anthropic_blocks(body: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """The request's prefix, block by block, as ``(block without cache_control, has a breakpoint)``."""
    out: list[tuple[dict[str, Any], bool]] = []

    def add(block: Any) -> None:
        if isinstance(block, dict):
            plain = {k: v for k, v in block.items() if k != "cache_control"}
            out.append((plain, "cache_control" in block))
        else:
            out.append(({"text": block}, False))

    for tool in body.get("tools") or []:
        add(tool)
    system = body.get("system")
    if isinstance(system, str):
        add({"type": "text", "text": system})
    elif isinstance(system, list):
        for block in system:
            add(block)
    for message in body.get("messages") or []:
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for i, block in enumerate(blocks):
            add({"role": message.get("role"), "first": i == 0, **block} if isinstance(block, dict) else block)
    return out


class _Billing:
    """Wraps each script step so that a reply carries the usage the cache rules give its request."""

    def _init_billing(self) -> None:
        self.bills: list[Bill] = []
        self._cache_lock = threading.Lock()

    def _wrap(self, step: Any) -> Callable[[RecordedRequest], Step]:
        def answer(request: RecordedRequest) -> Step:
            chosen = step(request) if callable(step) else step
            if not isinstance(chosen, Reply):
                return chosen
            body = request.body if isinstance(request.body, dict) else {}
            with self._cache_lock:
                return self.bill(body, chosen)  # type: ignore[attr-defined]

        return answer


class AnthropicCacheServer(_Billing, AnthropicServer):
    """An :class:`AnthropicServer` billing each request by Anthropic's prompt cache rules."""

    def __init__(self, script: Script = (), **kwargs: Any) -> None:
        super().__init__([], **kwargs)
        self._init_billing()
        #: prefix hash -> its tokens
        self.cached: dict[str, int] = {}
        self.add(*script)

    def add(self, *steps: Any) -> None:
        super().add(*(self._wrap(s) for s in steps))

    def bill(self, body: dict[str, Any], reply: Reply) -> Step:
        blocks = anthropic_blocks(body)
        marks = [i for i, (_, mark) in enumerate(blocks) if mark]
        if len(marks) > ANTHROPIC_MAX_BREAKPOINTS:
            return Fail(400, body={"type": "error", "error": {"type": "invalid_request_error",
                        "message": f"A maximum of {ANTHROPIC_MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(marks)}."}})
        minimum = anthropic_minimum(str(body.get("model", "")))
        hashes: list[str] = []
        ends: list[int] = []
        h = hashlib.sha256(str(body.get("model", "")).encode())
        total = 0
        for block, _ in blocks:
            h.update(json.dumps(block, sort_keys=True, ensure_ascii=False).encode())
            hashes.append(h.hexdigest())
            total += tokens(block)
            ends.append(total)
        read = 0
        for mark in marks:  # each breakpoint: the longest cached prefix within the lookback
            for i in range(mark, max(-1, mark - ANTHROPIC_LOOKBACK), -1):
                if hashes[i] in self.cached:
                    read = max(read, ends[i])
                    break
        written = 0
        eligible = [m for m in marks if ends[m] >= minimum]
        for mark in eligible:
            self.cached.setdefault(hashes[mark], ends[mark])
        if eligible and ends[eligible[-1]] > read:
            written = ends[eligible[-1]] - read
        self.bills.append(Bill(total=total, read=read, written=written))
        extra = {"cache_creation_input_tokens": written, "cache_read_input_tokens": read}
        return replace(reply, usage=(total - read - written, reply.usage[1]), usage_extra=extra)


class OpenAICacheServer(_Billing, OpenAIServer):
    """An :class:`OpenAIServer` billing each request by OpenAI's automatic prefix cache."""

    def __init__(self, script: Script = (), *, strict: bool = False, **kwargs: Any) -> None:
        super().__init__([], **kwargs)
        self._init_billing()
        self.strict = strict
        #: every prompt served, as the text its tokens are counted from
        self.prompts: list[str] = []
        self.refused = 0
        self.add(*script)

    def add(self, *steps: Any) -> None:
        super().add(*(self._wrap(s) for s in steps))

    @staticmethod
    def prompt(body: dict[str, Any]) -> str:
        """What the prefix is matched on: the tools, then the messages, as sent."""
        dump = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))  # noqa: E731
        return dump(body.get("tools") or []) + dump(body.get("messages") or [])

    def bill(self, body: dict[str, Any], reply: Reply) -> Step:
        if self.strict and "prompt_cache_key" in body:
            self.refused += 1
            self.script.insert(0, self._wrap(reply))  # the reply waits for the request without it
            return Fail(400, body={"error": {"message": "Unrecognized request argument supplied: prompt_cache_key",
                                             "type": "invalid_request_error", "param": None, "code": None}})
        text = self.prompt(body)
        total = tokens(text)
        shared = max((_common(text, p) for p in self.prompts), default=0) // 4
        read = 0 if shared < OPENAI_MIN_PREFIX else OPENAI_MIN_PREFIX + (shared - OPENAI_MIN_PREFIX) // OPENAI_STEP * OPENAI_STEP
        read = min(read, total)
        self.prompts.append(text)
        self.bills.append(Bill(total=total, read=read))
        return replace(reply, usage=(total, reply.usage[1]), usage_extra={"prompt_tokens_details": {"cached_tokens": read}})


def _common(a: str, b: str) -> int:
    """The length of the longest common prefix of two strings."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n
    while lo < hi:  # a[:lo] == b[:lo] always
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo
