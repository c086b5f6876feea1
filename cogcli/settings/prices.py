"""What a model request costs: a small table of the prices cog knows, in US dollars per million tokens.

A request's input is billed in three parts: the tokens read from the provider's prompt cache
(``cache_read``), the tokens written to it (``cache_write``: Anthropic bills a 5-minute write at
1.25× the input price, a 1-hour write at 2×; OpenAI caches for free), and the rest (``input``).
Output is ``output``. A model the table does not know has no cost (None, shown as "unknown"):
cog never guesses. The workspace's settings may add or override prices (``[prices."model"]`` in
``cog.toml``: ``input``, ``output``, ``cache_read``, ``cache_write``).

A table entry applies to its exact name and to dated snapshots of it (``gpt-4o-2024-08-06``,
``claude-sonnet-4-5-20250929``, ``claude-3-5-haiku-latest``), never to another model whose name
merely starts the same (``gpt-5.1`` is not ``gpt-5``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cache_write_1h`` is None where the provider has no 1-hour cache."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float | None = None


def _anthropic(input: float, output: float) -> Price:
    return Price(input=input, output=output, cache_read=round(input * 0.1, 6), cache_write=round(input * 1.25, 6), cache_write_1h=input * 2)


def _openai(input: float, cached: float, output: float) -> Price:
    return Price(input=input, output=output, cache_read=cached, cache_write=input)


#: prices as the providers publish them (USD per million tokens). Anthropic: cache read 0.1×,
#: 5-minute write 1.25×, 1-hour write 2× the input price; OpenAI: cached input at its listed
#: price, writes at the input price
PRICES: dict[str, Price] = {
    # Anthropic
    "claude-opus-4-5": _anthropic(5.0, 25.0),
    "claude-opus-4-1": _anthropic(15.0, 75.0),
    "claude-opus-4": _anthropic(15.0, 75.0),
    "claude-sonnet-4-5": _anthropic(3.0, 15.0),
    "claude-sonnet-4": _anthropic(3.0, 15.0),
    "claude-3-7-sonnet": _anthropic(3.0, 15.0),
    "claude-3-5-sonnet": _anthropic(3.0, 15.0),
    "claude-haiku-4-5": _anthropic(1.0, 5.0),
    "claude-3-5-haiku": _anthropic(0.8, 4.0),
    "claude-3-haiku": _anthropic(0.25, 1.25),
    "claude-3-opus": _anthropic(15.0, 75.0),
    # OpenAI
    "gpt-5": _openai(1.25, 0.125, 10.0),
    "gpt-5-mini": _openai(0.25, 0.025, 2.0),
    "gpt-5-nano": _openai(0.05, 0.005, 0.4),
    "gpt-4.1": _openai(2.0, 0.5, 8.0),
    "gpt-4.1-mini": _openai(0.4, 0.1, 1.6),
    "gpt-4.1-nano": _openai(0.1, 0.025, 0.4),
    "gpt-4o": _openai(2.5, 1.25, 10.0),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.6),
    "o1": _openai(15.0, 7.5, 60.0),
    "o3": _openai(2.0, 0.5, 8.0),
    "o3-mini": _openai(1.1, 0.55, 4.4),
    "o4-mini": _openai(1.1, 0.275, 4.4),
}

#: what may follow a table name in a snapshot's name: a date or ``-latest``
_SNAPSHOT = re.compile(r"(-\d{8}|-\d{4}-\d{2}-\d{2}|-latest)?\Z")
#: providers whose model names the table speaks of (a local Ollama model is nobody's price)
_PRICED_PROVIDERS = ("openai", "anthropic")


def model_name(spec: str) -> str | None:
    """The name a price is looked up by: ``anthropic:claude-sonnet-4-5`` → ``claude-sonnet-4-5``,
    ``openai:openai/gpt-4o`` (a gateway's vendor prefix) → ``gpt-4o``; None for a provider the
    table does not price (ollama, replay)."""
    provider, sep, name = spec.partition(":")
    if not sep:
        name, provider = spec, ""
    if provider and provider.lower() not in _PRICED_PROVIDERS:
        return None
    return name.rsplit("/", 1)[-1].strip().lower() or None


def price_of(spec: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of the model ``spec`` names (``provider:model`` or a bare name): the overrides'
    entry first, then the table's; None when neither knows it."""
    if overrides:
        bare = spec.partition(":")[2] or spec
        for key in (spec, bare, bare.rsplit("/", 1)[-1]):
            if key in overrides:
                return overrides[key]
    name = model_name(spec)
    if name is None:
        return None
    for table in (overrides or {}, PRICES):
        best = max((p for p in table if name.startswith(p) and _SNAPSHOT.match(name, len(p))), key=len, default=None)
        if best is not None:
            return table[best]
    return None


def cost_usd(
    price: Price | None,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
    cache_write_1h_tokens: int = 0,
) -> float | None:
    """A request's cost: ``input_tokens`` counts everything read (cached reads and cache writes
    included, as :class:`cogcli.wire.events.Usage` does); ``cache_write_1h_tokens`` is the part of the
    writes made for an hour. None without a price."""
    if price is None:
        return None
    write_1h = min(max(0, cache_write_1h_tokens), max(0, cache_write_tokens))
    write_5m = max(0, cache_write_tokens) - write_1h
    plain = max(0, input_tokens - max(0, cache_read_tokens) - max(0, cache_write_tokens))
    long_write = price.cache_write_1h if price.cache_write_1h is not None else price.cache_write
    total = (
        plain * price.input
        + max(0, cache_read_tokens) * price.cache_read
        + write_5m * price.cache_write
        + write_1h * long_write
        + max(0, output_tokens) * price.output
    )
    return total / 1_000_000


def format_cost(cost: float | None) -> str:
    """``$0.0123``, ``$1.24``, ``<$0.0001`` (a few tokens) or ``unknown``."""
    if cost is None:
        return "unknown"
    if 0 < cost < 0.0001:
        return "<$0.0001"
    if cost < 0.01:
        return f"${cost:.4f}"
    if cost < 10:
        return f"${cost:.3f}"
    return f"${cost:,.2f}"
