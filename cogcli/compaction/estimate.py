"""Tokens a request will take, estimated from its text when the provider has not counted it:
:class:`~cogcli.compaction.context_budget.ContextBudget` scales these by what the provider's reports taught."""

from __future__ import annotations

import json
from collections.abc import Sequence

from cogcli.models.base import Message, ToolSpec
from cogcli.models.tokens import CHARS_PER_TOKEN, estimate_image, estimate_text  # noqa: F401 (counted below the clients; re-exported)



def estimate_message(message: Message) -> int:
    """Tokens one message takes: its content, its images (by their pixels, never their base64), its
    reasoning sent back (text, signature, opaque data; a block no client sends back takes no room),
    its calls' names and arguments, and a few for its framing."""
    tokens = 4 + estimate_text(message.content) + sum(estimate_image(i.width, i.height) for i in message.images)
    for block in (b for b in message.reasoning if b.sent_back):
        tokens += 4 + estimate_text(block.text) + estimate_text(block.signature or "") + estimate_text(block.data or "")
    for call in message.tool_calls:
        args = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments, ensure_ascii=False)
        tokens += 4 + estimate_text(call.name) + estimate_text(args)
    return tokens


def estimate_messages(messages: Sequence[Message]) -> int:
    return sum(estimate_message(m) for m in messages)


def estimate_specs(specs: Sequence[ToolSpec]) -> int:
    return sum(estimate_text(json.dumps(s.model_dump(), ensure_ascii=False)) for s in specs)
