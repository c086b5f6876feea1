"""What a model request costs, in US dollars per million tokens: genai-prices' maintained data first
(:mod:`cogcli.settings.price_data`), cog's own small table (:data:`PRICES`) only for a model it lacks.

A request's input is billed in three parts: the tokens read from the provider's prompt cache
(``cache_read``), the tokens written to it (``cache_write``: Anthropic bills a 5-minute write at
1.25× the input price, a 1-hour write at 2×; OpenAI caches for free), and the rest (``input``).
Output is ``output``. Anthropic and Google bill a request above 200,000 input tokens at a higher
rate, all of it (:attr:`Price.tiers`). A model neither genai-prices nor the table knows has no
cost (None, shown as "unknown"): cog never guesses. The workspace's settings may add or override prices (``[prices."model"]`` in
``cog.toml``: ``input``, ``output``, ``cache_read``, ``cache_write``).

A table entry (genai-prices matches names its own way, snapshots included) applies to its exact name and to dated snapshots of it (``gpt-4o-2024-08-06``,
``claude-sonnet-4-5-20250929``, ``claude-3-5-haiku-latest``), never to another model whose name
merely starts the same (``gpt-5.1`` is not ``gpt-5``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from functools import lru_cache
from typing import Any

@dataclass(frozen=True)
class Price:
    """USD per million tokens. ``cache_write_1h`` is None where the provider has no 1-hour cache;
    ``tiers`` are the prices of a long request: ``(start, price)``, ascending, ``price`` billing
    all of a request whose input is above ``start`` tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    cache_write_1h: float | None = None
    tiers: tuple[tuple[int, Price], ...] = ()


def _anthropic(input: float, output: float) -> Price:
    return Price(input=input, output=output, cache_read=round(input * 0.1, 6), cache_write=round(input * 1.25, 6), cache_write_1h=input * 2)


def _openai(input: float, cached: float, output: float) -> Price:
    return Price(input=input, output=output, cache_read=cached, cache_write=input)


#: cog's own prices, as the providers published them in late 2025 (USD per million tokens), for a
#: model the installed genai-prices does not know (genai-prices answers first). Anthropic: cache
#: read 0.1×, 5-minute write 1.25×, 1-hour write 2× the input price; OpenAI: cached input at its
#: listed price, writes at the input price
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
    entry first, then genai-prices', then cog's table's; None when none knows it."""
    if overrides:
        bare = spec.partition(":")[2] or spec
        for key in (spec, bare, bare.rsplit("/", 1)[-1]):
            if key in overrides:
                return overrides[key]
    name = model_name(spec)
    if name is None:
        return None
    own = _in_table(name, overrides or {})
    if own is not None:
        return own
    provider = spec.partition(":")[0] if ":" in spec else "openai"
    return maintained_price(provider, name) or _in_table(name, PRICES)


def _in_table(name: str, table: Mapping[str, Price]) -> Price | None:
    """A table's entry for ``name`` or a dated snapshot of it (the longest that fits)."""
    best = max((p for p in table if name.startswith(p) and _SNAPSHOT.match(name, len(p))), key=len, default=None)
    return table[best] if best is not None else None


#: genai-prices' price keys, USD per million tokens, and the :class:`Price` fields they fill
_FIELDS = {
    "input_mtok": "input",
    "output_mtok": "output",
    "cache_read_mtok": "cache_read",
    "cache_write_mtok": "cache_write",
    "cache_write_1h_mtok": "cache_write_1h",
}


@lru_cache(maxsize=512)
def maintained_price(provider: str, name: str) -> Price | None:
    """:func:`looked_up_price`, kept across processes for the day (UTC) it was looked up
    (:func:`cogcli.settings.price_data.remembered`: the library is not imported to price a run on
    a model priced before)."""
    from cogcli.settings.price_data import remembered

    day = datetime.now(tz=UTC).date().isoformat()
    held = remembered(provider, name, f"price {day}", lambda: _as_json(looked_up_price(provider, name)))
    try:
        return _from_json(held)
    except (TypeError, ValueError, KeyError):  # a file edited by hand: ask the library
        return looked_up_price(provider, name)


def _as_json(price: Price | None) -> dict[str, Any] | None:
    if price is None:
        return None
    fields = {k: getattr(price, k) for k in ("input", "output", "cache_read", "cache_write", "cache_write_1h")}
    return {**fields, "tiers": [[start, _as_json(tier)] for start, tier in price.tiers]}


def _from_json(held: Any) -> Price | None:
    if held is None:
        return None
    tiers = tuple((int(start), _from_json(tier)) for start, tier in held.get("tiers", ()))
    one_hour = held.get("cache_write_1h")
    return Price(input=float(held["input"]), output=float(held["output"]), cache_read=float(held["cache_read"]),
                 cache_write=float(held["cache_write"]), cache_write_1h=None if one_hour is None else float(one_hour),
                 tiers=tiers)  # type: ignore[arg-type]


def looked_up_price(provider: str, name: str) -> Price | None:
    """The price genai-prices gives ``name`` today, as a :class:`Price`: cache reads at the
    provider's cache price (the input price where it has none), cache writes at the 5-minute and
    1-hour prices Anthropic bills (OpenAI's writes cost the input price), and a long-context tier
    (Anthropic and Google bill all of a request above 200,000 input tokens at a higher rate) as
    :attr:`Price.tiers`. None when genai-prices does not know the model or has no token price."""
    from cogcli.settings.price_data import maintained_model

    model = maintained_model(provider.lower(), name.lower())
    if model is None:
        return None
    prices = model.get_prices(datetime.now(tz=UTC))
    given = {field: getattr(prices, key, None) for key, field in _FIELDS.items()}
    if given["input"] is None or given["output"] is None:
        return None
    starts = sorted({tier.start for value in given.values() if _tiered(value) for tier in value.tiers})
    tiers = tuple((start, _at(given, start)) for start in starts)
    return _at(given, None, tiers)


def _tiered(value: Any) -> bool:
    return hasattr(value, "tiers") and hasattr(value, "base")


def _rate(value: Any, start: int | None) -> float | None:
    """A price key's rate: its base, or the tier in force from ``start`` input tokens on."""
    if value is None:
        return None
    if not _tiered(value):
        return float(Decimal(value))
    rate = value.base
    for tier in value.tiers:
        if start is not None and tier.start <= start:
            rate = tier.price
    return float(rate)


def _at(given: dict[str, Any], start: int | None, tiers: tuple[tuple[int, Price], ...] = ()) -> Price:
    rates = {field: _rate(value, start) for field, value in given.items()}
    input_rate, output_rate = rates["input"] or 0.0, rates["output"] or 0.0
    return Price(
        input=input_rate,
        output=output_rate,
        cache_read=input_rate if rates["cache_read"] is None else rates["cache_read"],
        cache_write=input_rate if rates["cache_write"] is None else rates["cache_write"],
        cache_write_1h=rates["cache_write_1h"],
        tiers=tiers,
    )


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
    for start, tier in price.tiers:  # a long request: every token at the tier's rate
        if input_tokens > start:
            price = tier
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
