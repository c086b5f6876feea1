"""How many tokens a text takes, estimated from its length: what the model clients (Anthropic's
cache breakpoints) and compaction (:mod:`cogcli.compaction.estimate`) both count with."""

from __future__ import annotations

#: characters per token, a little below the common 4 for code (so estimates err high)
CHARS_PER_TOKEN = 3.5


def estimate_text(text: str) -> int:
    """Tokens ``text`` takes, estimated from its length (rounded up)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1 if text else 0
