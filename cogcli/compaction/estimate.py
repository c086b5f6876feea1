"""Tokens a request will take, estimated from its text when the provider has not counted it:
:class:`~cogcli.compaction.budget.ContextBudget` scales these by what the provider's reports taught."""

from __future__ import annotations

import json
from collections.abc import Sequence

from cogcli.models.base import Message, ToolSpec

#: characters per token when nothing better is known (code and JSON run about 3.5–4)
CHARS_PER_TOKEN = 3.5


def estimate_text(text: str) -> int:
    """Tokens ``text`` takes, estimated from its length (rounded up)."""
    return int(len(text) / CHARS_PER_TOKEN) + 1 if text else 0


def estimate_message(message: Message) -> int:
    """Tokens one message takes: its content, its calls' names and arguments, and a few for its framing."""
    tokens = 4 + estimate_text(message.content)
    for call in message.tool_calls:
        args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
        tokens += 4 + estimate_text(call.name) + estimate_text(args)
    return tokens


def estimate_messages(messages: Sequence[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_specs(specs: Sequence[ToolSpec]) -> int:
    return sum(estimate_text(json.dumps(s.model_dump(), ensure_ascii=False)) for s in specs)
