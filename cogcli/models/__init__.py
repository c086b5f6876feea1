"""Model clients behind one :class:`Model` protocol, made from ``provider:model`` strings.

>>> model = get_model("openai:gpt-5.2")          # the Responses API; OPENAI_API_KEY, OPENAI_BASE_URL
>>> model = get_model("ollama:llama3.1")          # http://localhost:11434/v1, no key
>>> model = get_model("anthropic:claude-sonnet-4-5")  # ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
>>> model = get_model("replay:fixtures/cassettes/calc_fix.jsonl")

Only the protocol is imported here; each client (and httpx) is imported when a model is made,
so ``cog --help`` never pays for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from cogcli.contract.errors import ConfigError
from cogcli.models.base import (
    REASONING_LEVELS,
    Message,
    Model,
    ModelStreamEvent,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallRequest,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
    UsageReport,
)

if TYPE_CHECKING:
    from cogcli.models.sse import RetryPolicy
    from cogcli.settings.prices import Price

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
OLLAMA_DEFAULT_BASE_URL = "http://localhost:11434/v1"
ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com"
#: the APIs ``openai:`` speaks (``[providers.openai] api``, ``COG_OPENAI_API``)
OPENAI_APIS = ("responses", "chat")


def _ollama_url(host: str) -> str | None:
    """Ollama's API from ``OLLAMA_HOST`` as Ollama reads it (``127.0.0.1:11434``, ``0.0.0.0``,
    ``http://box:11434``): its OpenAI-compatible ``/v1``; None when unset."""
    host = host.strip().rstrip("/")
    if not host:
        return None
    if "://" not in host:
        host = f"http://{host}"
    parts = urlsplit(host)
    name = parts.hostname or "127.0.0.1"
    if name in ("0.0.0.0", "::"):  # where the server listens, not an address to call
        name = "127.0.0.1"
    port = parts.port or 11434
    shown = f"[{name}]" if ":" in name else name
    return f"{parts.scheme}://{shown}:{port}{parts.path}/v1"


def _ollama_hint(model_id: str) -> str:
    """What to say when nothing answers at Ollama's address: how to start it."""
    return (
        f"Is Ollama running? Start it with `ollama serve` (or open the Ollama app), fetch the model with "
        f"`ollama pull {model_id}`, then run cog again (OLLAMA_HOST says where it listens)"
    )


def parse_model_spec(spec: str) -> tuple[str, str]:
    """``"provider:model"`` → ``(provider, model)``; :class:`ConfigError` naming the fix otherwise."""
    provider, sep, rest = spec.strip().partition(":")
    provider = provider.lower()
    if not sep or not provider or not rest:
        raise ConfigError(
            f"model {spec!r} must be written provider:model, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, "
            f"ollama:llama3.1 or replay:path/to/cassette.jsonl"
        )
    if provider not in PROVIDERS:
        import difflib

        close = difflib.get_close_matches(provider, PROVIDERS, n=1, cutoff=0.6)
        guess = f"did you mean {close[0]}:{rest}? " if close else ""
        raise ConfigError(f"unknown model provider {provider!r} in {spec!r}; {guess}use one of: {', '.join(PROVIDERS)}")
    return provider, rest


def _check_url(url: str, source: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"base URL {url!r} (from {source}) must be an http:// or https:// URL")
    return url.rstrip("/")


@dataclass(frozen=True)
class ModelOptions:
    """What :func:`get_model` was asked for beyond the ``provider:model`` string."""

    base_url: str | None = None
    api_key: str | None = None
    retry: RetryPolicy | None = None
    timeout: float | None = None
    cache_ttl: str | None = None
    prompt_cache_key: bool | None = None
    prices: Mapping[str, Price] | None = None
    #: ``--reasoning``: off, low, medium or high (None: off)
    reasoning: str | None = None
    #: the ``vision`` setting: auto (None), on or off (:func:`cogcli.models.vision.sees_images`)
    vision: str | None = None
    #: the API ``openai:`` speaks, "responses" or "chat" (None: by its base URL, :func:`openai_api`)
    api: str | None = None

    def client_options(self) -> dict[str, Any]:
        """The HTTP clients' own tuning, only what was given (each client has its defaults)."""
        given = {"retry": self.retry, "timeout": self.timeout, "prices": dict(self.prices) if self.prices else None,
                 "reasoning": self.reasoning if self.reasoning not in (None, "off") else None,
                 "vision": self.vision if self.vision not in (None, "auto") else None}
        return {k: v for k, v in given.items() if v is not None}


def _url(options: ModelOptions, variable: str | None, default: str) -> str:
    """The base URL: the caller's, else the provider's variable, else its default; checked."""
    from_variable = os.environ.get(variable, "").strip() if variable else ""
    source = "base_url" if options.base_url else variable if from_variable else "default"
    return _check_url(options.base_url or from_variable or default, source or "default")


def _key(spec: str, options: ModelOptions, variable: str, url: str, default_host: str) -> str | None:
    """The API key: the caller's, else the provider's variable; required only at its own host."""
    key = options.api_key or os.environ.get(variable) or None
    if not key and urlsplit(url).hostname == default_host:
        base = variable.replace("_API_KEY", "_BASE_URL")
        raise ConfigError(f"{spec} needs an API key: set {variable} (or set {base} to a server that needs none)")
    return key


def _make_replay(spec: str, model_id: str, options: ModelOptions) -> Model:
    from cogcli.models.replay import ReplayModel

    return ReplayModel(Path(model_id).expanduser(), name=spec)


def openai_api(url: str, api: str | None = None) -> str:
    """Which OpenAI API ``openai:`` speaks at ``url``: ``COG_OPENAI_API``, else ``api`` (the
    person's ``[providers.openai] api``), else the Responses API at api.openai.com and Chat
    Completions at any other server (most OpenAI-compatible servers speak only that)."""
    chosen = os.environ.get("COG_OPENAI_API", "").strip().lower() or api
    if chosen is not None and chosen not in OPENAI_APIS:
        source = "COG_OPENAI_API" if os.environ.get("COG_OPENAI_API", "").strip() else "[providers.openai] api"
        raise ConfigError(f"{source} must be {' or '.join(OPENAI_APIS)}, got {chosen!r} "
                          "(responses: OpenAI's Responses API; chat: Chat Completions, what OpenAI-compatible servers speak)")
    if chosen is not None:
        return chosen
    return "responses" if urlsplit(url).hostname == "api.openai.com" else "chat"


def _make_openai(spec: str, model_id: str, options: ModelOptions) -> Model:
    from cogcli.models.openai import OpenAIModel

    url = _url(options, "OPENAI_BASE_URL", OPENAI_DEFAULT_BASE_URL)
    key = _key(spec, options, "OPENAI_API_KEY", url, "api.openai.com")
    client_class: type[OpenAIModel] = OpenAIModel
    if openai_api(url, options.api) == "responses":
        from cogcli.models.openai_responses import OpenAIResponsesModel

        client_class = OpenAIResponsesModel
    client = client_class(model_id, base_url=url, api_key=key, name=spec, auth_hint="check OPENAI_API_KEY",
                          prompt_cache_key=options.prompt_cache_key, **options.client_options())
    from cogcli.models.local_server import is_local, local_hint

    if is_local(url):  # a server on this machine that is not running: exit 2 with how to start it
        client.connect_hint = local_hint(url, model_id, "OPENAI_BASE_URL")
    return client


def _make_ollama(spec: str, model_id: str, options: ModelOptions) -> Model:
    from cogcli.models.openai import OpenAIModel

    host = _ollama_url(os.environ.get("OLLAMA_HOST", ""))
    source = "base_url" if options.base_url else "OLLAMA_HOST" if host else "default"
    url = _check_url(options.base_url or host or OLLAMA_DEFAULT_BASE_URL, source)
    client = OpenAIModel(model_id, base_url=url, api_key=options.api_key, name=spec, auth_hint="check the server's API key",
                         prompt_cache_key=options.prompt_cache_key, **options.client_options())
    client.connect_hint = _ollama_hint(model_id)  # a local server that is not running: exit 2 with how to start it
    return client


def _make_anthropic(spec: str, model_id: str, options: ModelOptions) -> Model:
    from cogcli.models.anthropic import CACHE_TTLS, AnthropicModel

    url = _url(options, "ANTHROPIC_BASE_URL", ANTHROPIC_DEFAULT_BASE_URL)
    key = _key(spec, options, "ANTHROPIC_API_KEY", url, "api.anthropic.com")
    if options.cache_ttl is not None and options.cache_ttl not in CACHE_TTLS:  # the client's own rule, said as a configuration error
        raise ConfigError(f"cache_ttl must be {' or '.join(CACHE_TTLS)}, got {options.cache_ttl!r}")
    return AnthropicModel(model_id, base_url=url, api_key=key, name=spec, cache_ttl=options.cache_ttl or "5m", **options.client_options())


@dataclass(frozen=True)
class Provider:
    """One provider, declared once: its name (``NAME:model``), what its model part is, how its
    client is made (imported only then), and the variable naming its base URL, if any."""

    name: str
    describes: str
    make: Callable[[str, str, ModelOptions], Model]
    url_variable: str | None = None


#: every provider cog speaks to; a new one is a ``_make_…`` function and a line here
PROVIDER_TABLE: tuple[Provider, ...] = (
    Provider("openai", "an OpenAI model: the Responses API at api.openai.com, Chat Completions at any other OPENAI_BASE_URL "
             "(OPENAI_API_KEY; COG_OPENAI_API=responses|chat)", _make_openai, "OPENAI_BASE_URL"),
    Provider("ollama", "a model served by Ollama (default http://localhost:11434/v1, OLLAMA_HOST; no key)", _make_ollama),
    Provider("anthropic", "an Anthropic Messages API model (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL)", _make_anthropic, "ANTHROPIC_BASE_URL"),
    Provider("replay", "the path of a cassette to play back (see `cog edit --record`)", _make_replay),
)
#: provider → what its model part is
PROVIDERS: dict[str, str] = {p.name: p.describes for p in PROVIDER_TABLE}
#: provider → the variable that names its base URL (over the person's config's ``[providers.NAME] base_url``)
PROVIDER_URL_VARIABLES: dict[str, str] = {p.name: p.url_variable for p in PROVIDER_TABLE if p.url_variable}


def get_model(
    spec: str,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    cache_ttl: str | None = None,
    prompt_cache_key: bool | None = None,
    prices: Mapping[str, Price] | None = None,
    reasoning: str | None = None,
    vision: str | None = None,
    api: str | None = None,
) -> Model:
    """Make the model a ``provider:model`` string names.

    ``base_url`` / ``api_key`` override the provider's environment variables. A key is required
    only for the provider's own default URL (a local or self-hosted server may need none); a
    missing one raises :class:`ConfigError` naming the variable to set. ``retry`` and ``timeout``
    tune the HTTP clients (the defaults retry 3 times with backoff, 120 s per read).

    Prompt caching: ``cache_ttl`` ("5m" default, or "1h") is how long Anthropic keeps the
    prefixes cog marks; ``prompt_cache_key`` sends the run's thread id as OpenAI's
    ``prompt_cache_key`` (None: only to api.openai.com; False: never; True: to any
    OpenAI-compatible server, and one that refuses the field is asked again without it).
    ``prices`` adds to or overrides :data:`cogcli.settings.prices.PRICES` for the cost in usage reports.
    ``reasoning`` (off, low, medium, high) asks for the model's reasoning: Anthropic's extended
    thinking, Chat Completions' ``reasoning_effort``, the Responses API's ``reasoning`` (a cassette
    replays what was recorded). ``vision`` (auto, on, off) says whether the model is sent images
    (auto: :data:`cogcli.models.vision.VISION_PATTERNS`). ``api`` ("responses" or "chat") is the API ``openai:`` speaks
    (:func:`openai_api`: ``COG_OPENAI_API`` wins; by default the Responses API at api.openai.com only)."""
    if reasoning not in (None, *REASONING_LEVELS):
        raise ConfigError(f"reasoning must be {', '.join(REASONING_LEVELS)}, got {reasoning!r}")
    if vision not in (None, "auto", "on", "off"):
        raise ConfigError(f"vision must be auto, on or off, got {vision!r}")
    provider, model_id = parse_model_spec(spec)
    options = ModelOptions(base_url=base_url, api_key=api_key, retry=retry, timeout=timeout, cache_ttl=cache_ttl,
                           prompt_cache_key=prompt_cache_key, prices=prices, reasoning=reasoning, vision=vision, api=api)
    return next(p for p in PROVIDER_TABLE if p.name == provider).make(spec, model_id, options)


__all__ = [
    "PROVIDERS",
    "PROVIDER_TABLE",
    "ModelOptions",
    "Provider",
    "Message",
    "Model",
    "ModelStreamEvent",
    "REASONING_LEVELS",
    "Reasoning",
    "ReasoningDelta",
    "ReasoningFinished",
    "TextDelta",
    "ToolCallArgsDelta",
    "ToolCallFinished",
    "ToolCallRequest",
    "ToolCallStarted",
    "ToolSpec",
    "TurnFinished",
    "UsageReport",
    "get_model",
    "parse_model_spec",
]
