"""How many tokens a text takes, estimated from its length: what the model clients (Anthropic's
cache breakpoints) and compaction (:mod:`cogcli.compaction.estimate`) both count with."""

from __future__ import annotations

#: characters per token, a little below the common 4 for code (so estimates err high)
CHARS_PER_TOKEN = 3.5


def estimate_text(text: str) -> int:
    """Tokens ``text`` takes, estimated from its length (rounded up)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1 if text else 0


def estimate_image(width: int, height: int) -> int:
    """Tokens an image takes: Anthropic's ``width × height / 750`` (OpenAI's tiles come to about
    the same for the sizes cog sends, at most 1568 px on the long edge: ~1,600 tokens)."""
    return max(1, width * height // 750)
