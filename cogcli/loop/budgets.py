"""A run's budgets: at most so many tokens (``--max-tokens``), at most so many US dollars
(``--max-cost``). :class:`Budget` is checked after every model response (the run's summary
requests for compaction count too); the first response that takes the run past a budget ends it
with status ``budget_exceeded`` — the calls of that response are not run — and its ``finish``
says which budget, its limit and what was spent (:class:`~cogcli.wire.events.BudgetSpent`).

A cost budget needs the model's price: :func:`check_cost_budget` refuses, before anything runs,
a model whose price cog does not know (the fix: a ``[prices."model"]`` entry), and a workspace's
settings never make a model cog's table knows cheaper for a budget (a hostile repository could
otherwise price it at zero): :func:`budget_prices` drops such an override.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cogcli.contract.errors import ConfigError
from cogcli.wire.events import BudgetSpent, Usage

log = logging.getLogger("cogcli")

#: the largest budgets cog accepts (a typo such as 1e30 is refused rather than meaning "none")
MAX_TOKENS_LIMIT = 1_000_000_000_000
MAX_COST_LIMIT = 1_000_000.0


@dataclass(frozen=True)
class Budget:
    """What a run may spend; None: no limit of that kind."""

    max_tokens: int | None = None
    max_cost: float | None = None

    def __post_init__(self) -> None:
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not 0 < self.max_tokens <= MAX_TOKENS_LIMIT):
            raise ConfigError(f"--max-tokens must be a whole number of tokens from 1 to {MAX_TOKENS_LIMIT:,}, got {self.max_tokens!r}")
        if self.max_cost is not None and not (math.isfinite(self.max_cost) and 0 < self.max_cost <= MAX_COST_LIMIT):
            raise ConfigError(f"--max-cost must be a number of US dollars above 0 and at most {MAX_COST_LIMIT:,.0f}, got {self.max_cost!r}")

    @property
    def limited(self) -> bool:
        return self.max_tokens is not None or self.max_cost is not None

    def spent(self, usage: Usage) -> BudgetSpent | None:
        """The budget ``usage`` has gone past, or None while it is within both. A cost budget
        with a response whose cost is unknown (a provider that reported no usage) is past too:
        cog cannot say the run is still within it, and never guesses."""
        tokens = usage.total_tokens or (usage.input_tokens + usage.output_tokens)
        if self.max_tokens is not None and tokens > self.max_tokens:
            return BudgetSpent(kind="tokens", limit=self.max_tokens, used=tokens)
        if self.max_cost is not None:
            if usage.counted and usage.cost_usd is None:
                return BudgetSpent(kind="cost", limit=self.max_cost, used=None)
            if (usage.cost_usd or 0.0) > self.max_cost:
                return BudgetSpent(kind="cost", limit=self.max_cost, used=round(usage.cost_usd or 0.0, 6))
        return None


def spent_message(spent: BudgetSpent) -> str:
    """``the run used 12,345 tokens, over its budget of 10,000 (--max-tokens)``."""
    if spent.kind == "tokens":
        return f"the run used {int(spent.used or 0):,} tokens, over its budget of {int(spent.limit):,} (--max-tokens)"
    if spent.used is None:
        return f"a model response's cost is unknown (the provider reported no usage): the run stopped to stay within --max-cost ${spent.limit:g}"
    return f"the run cost ${spent.used:.4f}, over its budget of ${spent.limit:g} (--max-cost)"


def check_cost_budget(model: str, prices: Mapping[str, Any], *, price_sources: Mapping[str, str] | None = None) -> None:
    """Refuse ``--max-cost`` for a model whose price cog does not know: a ConfigError naming the
    fix. A ``replay:`` cassette may have one when it records every turn's cost."""
    from cogcli.settings.prices import price_of

    if model.startswith("replay:"):
        from cogcli.models.replay import read_cassette

        path = model.partition(":")[2]
        _, turns = read_cassette(path)
        if any(turn.usage is None or turn.usage.cost_usd is None for _, turn in turns):
            raise ConfigError(f"--max-cost needs each turn's cost, and the cassette {path} records none for some turns: use --max-tokens")
        return
    if price_of(model, prices) is None:
        name = model.partition(":")[2] or model
        raise ConfigError(
            f"--max-cost needs the price of {model}, and cog does not know it: add it to cog.toml "
            f'([prices."{name}"] with input and output in USD per million tokens, e.g. input = 1.0, output = 4.0), '
            "or use --max-tokens instead"
        )


def budget_prices(model: str, prices: Mapping[str, Any]) -> dict[str, Any]:
    """The prices a run with a cost budget counts with: the workspace's own, except an entry that
    would price a model cog's table knows below the table (the workspace cannot lift a budget)."""
    from cogcli.settings.prices import price_of

    known = price_of(model)
    if known is None or not prices:
        return dict(prices)
    chosen = price_of(model, prices)
    if chosen is None or chosen == known or _not_cheaper(chosen, known):
        return dict(prices)
    log.warning("the workspace's prices make %s cheaper than cog's table; --max-cost counts with the table's price", model)
    return {k: v for k, v in prices.items() if price_of(model, {k: v}) is not v}


def _not_cheaper(chosen: Any, known: Any) -> bool:
    return all(getattr(chosen, f) >= getattr(known, f) for f in ("input", "output", "cache_read", "cache_write"))
