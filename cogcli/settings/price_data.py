"""Prices and context windows from genai-prices: Pydantic's maintained price data, offline.

genai-prices (``pip install genai-prices``; pydantic-ai prices runs with it) ships every
provider's published prices as data inside the package, updated with each release: no network,
no key. cog asks it first and keeps its own table (:data:`cogcli.settings.prices.PRICES`,
:data:`cogcli.models.context.WINDOWS`) only for what it lacks. Here: the lookup of a model's entry
(:func:`maintained_model`) and its window; :func:`cogcli.settings.prices.maintained_price` reads
its prices.

The library is imported on the first lookup, never at start-up (``cog --help`` does not load it):
the import and the first lookup take about 0.1–0.2 s together, each later lookup microseconds (the
answers are kept for the process). A model's window (needed before a run's first request) and its
price of the day are also kept across processes (:func:`remembered`: ``model-data.json`` in the
person's state folder, for the installed genai-prices data only): a ``cog edit`` on a model looked
up before does not import the library at all (issue 53). What the file holds only decides when
history is compacted and what a run is said to cost; a budget (``--max-cost``) is checked with the
prices it gets from here, as from the library.

A model is looked up under the provider its spec names, then under the other makers whose
names cog's clients speak of (:data:`MAKERS`): ``openai:gemini-3-pro-preview`` through Google's
OpenAI-compatible endpoint, ``openai:anthropic/claude-sonnet-4-5`` through a gateway. A model
served by anyone else (a local vLLM, Ollama) is nobody's price here.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
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
    """The context window genai-prices gives ``name`` (tokens), None when it gives none (kept
    across processes: :func:`remembered`)."""

    def look_up() -> int | None:
        window = getattr(maintained_model(provider.lower(), name.lower()), "context_window", None)
        return window if isinstance(window, int) and window > 0 else None

    window = remembered(provider, name, "window", look_up)
    return window if isinstance(window, int) and window > 0 else None


def remembered(provider: str, name: str, what: str, look_up: Callable[[], Any]) -> Any:
    """``what`` of a model (a JSON value), as the installed genai-prices data gives it: from
    ``model-data.json`` in the person's state folder when an earlier process looked it up in the
    same data, else ``look_up()`` (which imports the library), kept for the next. Without
    genai-prices, or when the file cannot be read or written, ``look_up()`` answers every time."""
    stamp = _data_stamp()
    if stamp is None:
        return look_up()
    key = f"{provider.lower()}:{name.lower()}"
    held = _read_cache(stamp)
    entry = held.get(key)
    if isinstance(entry, dict) and what in entry:
        return entry[what]
    value = look_up()
    kind = what.split(" ")[0]  # "price DAY": yesterday's price is dropped
    entry = {**{k: v for k, v in (entry if isinstance(entry, dict) else {}).items() if k.split(" ")[0] != kind}, what: value}
    held.pop(key, None)
    _write_cache(stamp, {**held, key: entry})
    return value


#: the file of what was looked up, in the person's state folder
CACHE_FILE = "model-data.json"
#: at most this many models kept (a person uses a handful)
MAX_CACHED = 100


def _data_stamp() -> str | None:
    """What identifies the installed genai-prices data (its data file's path, size and time),
    found without importing the library; None when it is not installed."""
    from importlib.util import find_spec

    try:
        spec = find_spec("genai_prices")
        folder = next(iter(spec.submodule_search_locations or ())) if spec is not None else None
        if folder is None:
            return None
        data = os.stat(os.path.join(folder, "data.py"))
    except (ImportError, ValueError, OSError, StopIteration):
        return None
    return f"{folder}:{data.st_size}:{data.st_mtime_ns}"


#: the workspace cog runs in (:func:`use_workspace`): a state folder inside it is not the person's
_workspace: str | None = None


def use_workspace(root: Any) -> None:
    """Keep the file in a state folder outside ``root`` (the workspace a session runs in): an
    ``$XDG_STATE_HOME`` inside the workspace gives way to the default, as for the undo key — what
    a test or a tool there writes never sets the prices a cost budget counts with."""
    global _workspace
    _workspace = str(root)


def _cache_path() -> str:
    from pathlib import Path

    from cogcli.settings.person_state import state_home

    return os.path.join(state_home(Path(_workspace) if _workspace else None), CACHE_FILE)


def _read_cache(stamp: str) -> dict[str, Any]:
    try:
        with open(_cache_path(), encoding="utf-8") as file:
            held = json.load(file)
    except Exception:  # none yet, unreadable, or no state folder outside the workspace
        return {}
    if not isinstance(held, dict) or held.get("data") != stamp or not isinstance(held.get("models"), dict):
        return {}
    return dict(held["models"])


def _write_cache(stamp: str, models: dict[str, Any]) -> None:
    """Keep ``models`` for the next process (0600, replaced whole; a failure only costs time)."""
    try:
        path = _cache_path()
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        kept = dict(list(models.items())[-MAX_CACHED:])
        partial = f"{path}.{os.getpid()}"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            json.dump({"data": stamp, "models": kept}, file)
        os.replace(partial, path)
    except Exception:  # a read-only home, a state folder inside the workspace: looked up next time too
        log.debug("could not keep what genai-prices said of the models", exc_info=True)
