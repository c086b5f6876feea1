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

Adaptive thinking: the models that take it (:func:`adaptive_thinking`: Claude Opus 4.6, Sonnet
4.6 and every later Claude, Mythos and Fable included — on some of them a fixed budget is
deprecated or refused) get ``thinking: {"type": "adaptive", "display": "summarized"}`` and the
level as ``output_config: {"effort": …}`` instead: the model decides how much to think. The
thinking is asked ``summarized`` because newer models default to ``omitted`` (an empty text with
its signature), and cog shows the reasoning. ``max_tokens`` grows by the level's budget all the
same (thinking counts toward it). Adaptive thinking interleaves by itself: no beta header.
"""

from __future__ import annotations

import re
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


#: a Claude model id's family and version: ``claude-opus-4-6``, ``anthropic.claude-sonnet-4-6-v1``,
#: ``claude-opus-5``; a date is no minor version (``claude-opus-4-20250514`` is 4.0)
_CLAUDE = re.compile(r"claude-(?P<family>opus|sonnet|haiku|mythos|fable)(?:-(?P<major>\d+)(?:[-.](?P<minor>\d{1,2}))?(?!\d))?")
#: the families that think only adaptively, whatever their version
_ADAPTIVE_FAMILIES = ("mythos", "fable")
#: the first version that takes adaptive thinking (Claude Opus 4.6, Sonnet 4.6)
FIRST_ADAPTIVE = (4, 6)


def adaptive_thinking(model: str) -> bool:
    """Whether ``model`` takes adaptive thinking (``thinking: {"type": "adaptive"}`` with an
    effort): Claude 4.6 and later, and the Mythos and Fable families. Older models (Sonnet 4.5,
    Opus 4.1, Claude 3.7, …) take only a fixed budget."""
    found = _CLAUDE.search(model.lower())
    if found is None:
        return False
    if found["family"] in _ADAPTIVE_FAMILIES:
        return True
    if found["major"] is None:
        return False
    return (int(found["major"]), int(found["minor"] or 0)) >= FIRST_ADAPTIVE


def thinking_params(body: dict[str, Any], budget: int, *, effort: str | None = None) -> None:
    """Ask for thinking in ``body`` (in place): a fixed budget (``thinking`` enabled with
    ``budget_tokens``), or, given an ``effort`` (a model that takes adaptive thinking),
    ``thinking`` adaptive with ``output_config.effort``; ``max_tokens`` grown by the budget, no
    ``temperature``, ``tool_choice`` at most ``auto`` (the API refuses ``any`` and ``tool`` with
    thinking)."""
    if effort is None:
        body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    else:
        body["thinking"] = {"type": "adaptive", "display": "summarized"}
        body["output_config"] = {**(body.get("output_config") or {}), "effort": effort}
    body["max_tokens"] = int(body["max_tokens"]) + budget
    body.pop("temperature", None)
    if (body.get("tool_choice") or {}).get("type") not in (None, "auto", "none"):
        body["tool_choice"] = {"type": "auto"}


def thinking_headers(body: dict[str, Any]) -> dict[str, str]:
    """The headers a request ``body`` needs for its thinking: the interleaved-thinking beta when
    it thinks with a fixed budget and offers tools, to a model outside the Claude 3 family
    (adaptive thinking interleaves without it)."""
    thinking = body.get("thinking") or {}
    if thinking.get("type") == "enabled" and body.get("tools") and "claude-3" not in str(body.get("model", "")).lower():
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
