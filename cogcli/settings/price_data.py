"""Prices and context windows from genai-prices: Pydantic's maintained price data, offline.

genai-prices (``pip install genai-prices``; pydantic-ai prices runs with it) ships every
provider's published prices as data inside the package, updated with each release: no network,
no key. cog asks it first and keeps its own table (:data:`cogcli.settings.prices.PRICES`,
:data:`cogcli.models.context.WINDOWS`) only for what it lacks. Here: the lookup of a model's entry
(:func:`maintained_model`) and its window; :func:`cogcli.settings.prices.maintained_price` reads
its prices.

The library is imported on the first lookup, never at start-up (``cog --help`` does not load it):
the import and the first lookup take about 0.2 s together, each later lookup microseconds (the
answers are kept for the process).

A model is looked up under the provider its spec names, then under the other makers whose
names cog's clients speak of (:data:`MAKERS`): ``openai:gemini-3-pro-preview`` through Google's
OpenAI-compatible endpoint, ``openai:anthropic/claude-sonnet-4-5`` through a gateway. A model
served by anyone else (a local vLLM, Ollama) is nobody's price here.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import Any

log = logging.getLogger("cogcli.settings")

#: the model makers whose published prices a model name is looked up in (genai-prices' ids)
MAKERS = ("openai", "anthropic", "google")


@lru_cache(maxsize=512)
def maintained_model(provider: str, name: str) -> Any | None:
    """genai-prices' entry for ``name`` (``ModelInfo``), under ``provider`` first; None when it
    knows none, or is not installed."""
    try:
        from genai_prices.data_snapshot import get_snapshot
    except ImportError:  # cog without the dependency: its own table answers
        log.debug("genai-prices is not installed: prices and windows come from cog's table")
        return None
    snapshot = get_snapshot()
    for maker in dict.fromkeys((provider, *MAKERS)):
        if maker not in MAKERS:
            continue
        try:
            return snapshot.find_provider_model(name, None, maker, None)[1]
        except LookupError:
            continue
    return None


def maintained_window(provider: str, name: str) -> int | None:
    """The context window genai-prices gives ``name`` (tokens), None when it gives none."""
    model = maintained_model(provider.lower(), name.lower())
    window = getattr(model, "context_window", None)
    return window if isinstance(window, int) and window > 0 else None
