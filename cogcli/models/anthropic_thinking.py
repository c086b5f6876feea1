"""Extended thinking on the Anthropic Messages API: what ``--reasoning`` asks for, and the
thinking blocks kept and sent back.

A level becomes ``thinking: {"type": "enabled", "budget_tokens": B}`` (:data:`THINKING_BUDGETS`:
low 2,048, medium 8,192, high 16,384 tokens — Anthropic's minimum is 1,024) and the request's
``max_tokens`` grows by the budget, so the answer keeps the room it had without thinking
(8,192 + 16,384 = 24,576 at most: under every thinking model's output limit, Opus 4's 32,000
included). With thinking, cog sends no ``temperature`` and no ``tool_choice`` (the API allows
only ``auto``/``none`` then; cog never sends one, which is ``auto``).

The stream's thinking blocks (``thinking_delta`` pieces, then one ``signature_delta``) and
``redacted_thinking`` blocks (``data`` only, encrypted) are kept verbatim
(:class:`~cogcli.models.base.Reasoning`, format ``"anthropic"``) and sent back first in the same
assistant message as the turn's ``tool_use`` blocks (the API answers 400 otherwise): text and
signature, or data, exactly as they came. A block cog altered (``altered``: a credential
redacted in a stored thread) is left out — its signature no longer holds; Anthropic allows
leaving out thinking of earlier turns. Blocks are sent back only while thinking is on.

Interleaved thinking (thinking between tool calls, after each tool result) is a beta on the
Claude 4 models: the header ``anthropic-beta: interleaved-thinking-2025-05-14`` goes with every
request that has thinking and tools, to models other than the Claude 3 family (Claude 3.7
Sonnet thinks only at the start of a turn and does not take it).
"""

from __future__ import annotations

from typing import Any

from cogcli.models.base import Reasoning

#: thinking tokens per ``--reasoning`` level
THINKING_BUDGETS: dict[str, int] = {"low": 2048, "medium": 8192, "high": 16384}
#: the smallest budget Anthropic takes
MIN_BUDGET = 1024
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
#: the format of the blocks this client keeps and sends back
FORMAT = "anthropic"


def thinking_budget(level: str | None) -> int | None:
    """The thinking budget of a ``--reasoning`` level (None: off)."""
    if level in (None, "", "off"):
        return None
    if level not in THINKING_BUDGETS:
        raise ValueError(f"reasoning must be off, low, medium or high, got {level!r}")
    return THINKING_BUDGETS[level]


def thinking_params(body: dict[str, Any], budget: int) -> None:
    """Ask for thinking in ``body`` (in place): the ``thinking`` parameter, ``max_tokens`` grown
    by the budget, no ``temperature``, ``tool_choice`` at most ``auto``."""
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    body["max_tokens"] = int(body["max_tokens"]) + budget
    body.pop("temperature", None)
    if (body.get("tool_choice") or {}).get("type") not in (None, "auto", "none"):
        body["tool_choice"] = {"type": "auto"}


def thinking_headers(body: dict[str, Any]) -> dict[str, str]:
    """The headers a request ``body`` needs for its thinking: the interleaved-thinking beta when
    it thinks and offers tools, to a model outside the Claude 3 family."""
    if body.get("thinking") and body.get("tools") and "claude-3" not in str(body.get("model", "")).lower():
        return {"anthropic-beta": INTERLEAVED_THINKING_BETA}
    return {}


def blocks_of(reasoning: list[Reasoning]) -> list[dict[str, Any]]:
    """The Anthropic blocks to send back, verbatim, first in their assistant message."""
    out: list[dict[str, Any]] = []
    for r in reasoning:
        if r.format != FORMAT or r.altered:
            continue
        if r.kind == "thinking" and r.signature is not None:
            out.append({"type": "thinking", "thinking": r.text, "signature": r.signature})
        elif r.kind == "redacted_thinking" and r.data is not None:
            out.append({"type": "redacted_thinking", "data": r.data})
    return out


class ThinkingBlock:
    """One thinking or redacted_thinking block as it streams."""

    def __init__(self, start: dict[str, Any]) -> None:
        self.kind = str(start.get("type"))
        self.parts: list[str] = [start["thinking"]] if isinstance(start.get("thinking"), str) and start["thinking"] else []
        self.signature: list[str] = [start["signature"]] if isinstance(start.get("signature"), str) and start["signature"] else []
        self.data = start.get("data") if isinstance(start.get("data"), str) else None

    def add(self, delta: dict[str, Any]) -> str | None:
        """Fold a ``thinking_delta`` / ``signature_delta`` in; the text to show, if any."""
        if delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
            self.parts.append(delta["thinking"])
            return delta["thinking"] or None
        if delta.get("type") == "signature_delta" and isinstance(delta.get("signature"), str):
            self.signature.append(delta["signature"])
        return None

    def block(self) -> Reasoning:
        if self.kind == "redacted_thinking":
            return Reasoning(format=FORMAT, kind=self.kind, data=self.data or "")
        return Reasoning(format=FORMAT, kind="thinking", text="".join(self.parts), signature="".join(self.signature))
