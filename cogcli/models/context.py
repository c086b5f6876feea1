"""How much a model can read at once: its context window, and the provider's "too long" errors.

- :func:`known_window` — a model's window (tokens) from genai-prices' maintained data
  (:mod:`cogcli.settings.price_data`), else from a small table of common models' windows, matched
  by the longest prefix of the model's name (``openai:gpt-4o-2024-08-06`` is ``gpt-4o``;
  OpenRouter's ``anthropic/claude-sonnet-4`` is ``claude-sonnet-4``): open models, and what
  genai-prices gives no window (Gemini 3 Pro).
- :func:`reported_window` — what an OpenAI-compatible server says of the model it serves (vLLM's
  ``max_model_len``, OpenRouter's ``context_length``, LM Studio's ``max_context_length``).
- :func:`context_overflow` — whether an error answer is a context-length error, in OpenAI's
  (``code: context_length_exceeded``, "maximum context length is N tokens"), Anthropic's
  ("prompt is too long: N tokens > M maximum"), vLLM's and llama.cpp's words, with the window and
  the request's size when the message says them.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("cogcli.models")

#: context windows in tokens, by model name prefix (longest prefix wins), for what genai-prices
#: gives no window
WINDOWS: dict[str, int] = {
    # OpenAI
    "gpt-5.4": 1_050_000,
    "gpt-5": 400_000,
    "gpt-4.1": 1_047_576,
    "gpt-4o": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4.5": 128_000,
    "gpt-4-32k": 32_768,
    "gpt-4-1106": 128_000,
    "gpt-4-0125": 128_000,
    "gpt-4": 8_192,
    "chatgpt-4o": 128_000,
    "gpt-3.5-turbo": 16_385,
    "o1-mini": 128_000,
    "o1-preview": 128_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "codex-mini": 200_000,
    # Anthropic (Opus and Sonnet 4.6: a million tokens, generally available)
    "claude-opus-4-6": 1_000_000,
    "claude-sonnet-4-6": 1_000_000,
    "claude-": 200_000,
    # Google (through OpenAI-compatible gateways; Gemini 3 Pro reads 1,048,576)
    "gemini-1.5-pro": 2_097_152,
    "gemini-": 1_048_576,
    # open models as their makers publish them (a local server may serve less: set context_window)
    "deepseek-chat": 65_536,
    "deepseek-reasoner": 65_536,
    "deepseek-coder": 131_072,
    "qwen2.5-coder": 32_768,
    "qwen3-coder": 262_144,
    "llama3.1": 131_072,
    "llama3.2": 131_072,
    "llama3.3": 131_072,
    "llama-3.1": 131_072,
    "llama-3.3": 131_072,
    "mistral-large": 131_072,
    "codestral": 262_144,
    "devstral": 131_072,
}

#: the fields OpenAI-compatible servers put a model's window in, on its ``/models`` entry
_REPORT_FIELDS = ("max_model_len", "context_length", "max_context_length", "context_window", "n_ctx")


def model_id(spec: str) -> str:
    """The bare model name of a ``provider:model`` spec, without a ``vendor/`` prefix."""
    name = spec.split(":", 1)[1] if ":" in spec else spec
    return name.rsplit("/", 1)[-1].lower()


def known_window(spec: str | None) -> int | None:
    """The window of a known model (``openai:gpt-4o-mini`` → 128000): genai-prices' first, then the
    table's; None when neither has one."""
    if not spec or spec.lower().startswith(("replay:", "ollama:")):  # Ollama serves its own num_ctx, often far less
        return None
    name = model_id(spec)
    if name.startswith("ft:"):  # a fine-tuned model has its base model's window: ft:gpt-4o-mini-…:org::id
        name = name.split(":")[1]
    from cogcli.settings.price_data import maintained_window

    provider = spec.partition(":")[0].lower() if ":" in spec else "openai"
    window = maintained_window(provider, name)
    if window is not None:
        return window
    best = max((p for p in WINDOWS if name.startswith(p)), key=len, default=None)
    return WINDOWS[best] if best is not None else None


async def reported_window(model: Any, *, timeout: float = 5.0) -> int | None:
    """The window an OpenAI-compatible server reports for ``model`` (None when it says nothing,
    is api.openai.com, whose list has no windows, or does not answer within ``timeout``)."""
    base = getattr(model, "base_url", None)
    http = getattr(model, "_http", None)
    wanted = getattr(model, "model", None)
    if not isinstance(base, str) or http is None or not wanted or "api.openai.com" in base or "anthropic" in base:
        return None
    import anyio

    headers = model._headers() if hasattr(model, "_headers") else {}
    headers = {k: v for k, v in headers.items() if k.lower() != "accept"}
    try:
        with anyio.fail_after(timeout):
            response = await http().get(f"{base.rstrip('/')}/models", headers=headers)
        if response.status_code != 200:
            return None
        return window_from_models(response.json(), wanted)
    except Exception as exc:  # an old server without /models, a timeout: the table or the flag decide
        log.debug("%s: no context window reported (%s)", getattr(model, "name", "?"), exc)
        return None


def window_from_models(payload: Any, model: str) -> int | None:
    """The window of ``model`` in a ``/models`` answer (``{"data": [{"id", "max_model_len"…}]}``)."""
    entries = payload.get("data") if isinstance(payload, dict) else payload
    if not isinstance(entries, list):
        return None
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("id") not in (model, model.split("/")[-1]):
            continue
        for where in (entry, entry.get("meta") or {}, entry.get("top_provider") or {}):
            for key in _REPORT_FIELDS:
                value = where.get(key) if isinstance(where, dict) else None
                if isinstance(value, int) and not isinstance(value, bool) and value > 0:
                    return value
    return None


# --- "the request is too long" -----------------------------------------------------------


@dataclass(frozen=True)
class Overflow:
    """A context-length error: the window and the request's size, where the message says them."""

    limit: int | None = None
    tokens: int | None = None


_LIMIT = [
    re.compile(r"maximum context length is (\d+)"),  # OpenAI, vLLM, OpenRouter
    re.compile(r"tokens? > (\d+) maximum"),  # Anthropic: prompt is too long: 208310 tokens > 200000 maximum
    re.compile(r"\d+ \+ \d+ > (\d+)"),  # Anthropic: input length and max_tokens exceed context limit: a + b > c
    re.compile(r"context window of (\d+)"),
    re.compile(r"context (?:size|length) (?:of |is )?(\d+)"),
]
_TOKENS = [
    re.compile(r"resulted in (\d+) tokens"),
    re.compile(r"requested (?:about )?(\d+) tokens"),
    re.compile(r"too long: (\d+) tokens"),
    re.compile(r"(\d+) \+ \d+ > \d+"),
]
_WORDS = re.compile(
    r"context_length_exceeded|maximum context length|prompt is too long|exceed(?:s|ed)? (?:the )?(?:available )?context"
    r"|context (?:window|limit|size)|exceed_context_size|too many tokens|input is too long",
    re.IGNORECASE,
)


def context_overflow(status: int, body: bytes | str | Any) -> Overflow | None:
    """An :class:`Overflow` when the error answer (HTTP ``status``, its body) says the request
    was longer than the model can read; None for any other error."""
    if status not in (400, 413, 422) and status != 0:  # 0: an error event inside a stream
        return None
    payload: Any = body
    if isinstance(body, (bytes, str)):
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        try:
            payload = json.loads(text)
        except ValueError:
            payload = text
    err = payload.get("error") if isinstance(payload, dict) else None
    err = err if isinstance(err, dict) else {}
    code = str(err.get("code") or "") + " " + str(err.get("type") or "")
    message = str(err.get("message") or (payload if isinstance(payload, str) else payload.get("message", "") if isinstance(payload, dict) else ""))
    if "context_length_exceeded" not in code and "exceed_context_size" not in code and not _WORDS.search(message):
        return None
    limit = _first(_LIMIT, message) or _int(err.get("n_ctx"))
    tokens = _first(_TOKENS, message) or _int(err.get("n_prompt_tokens"))
    return Overflow(limit=limit, tokens=tokens)


def _first(patterns: list[re.Pattern[str]], text: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(text)
        if found:
            return int(found.group(1))
    return None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None
