"""Which models see images, and what a model that does not reads instead.

A client sends a message's :attr:`~cogcli.models.base.Message.images` only to a model that sees
them: the person's ``vision`` setting (``on`` / ``off``) decides when given, else
:func:`sees_images` from the model's name (:data:`VISION_PATTERNS`; genai-prices knows prices and
windows but not modalities). Any other model reads, in place of each image, a text saying it was
not shown and why (:func:`without_images`) — never a request its provider refuses.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from cogcli.models.base import Message

#: the values of the ``vision`` setting: from the model's name, or the person's word
VISION_CHOICES = ("auto", "on", "off")

#: model names (the part after ``provider:``) of models that take images, as their providers document
VISION_PATTERNS: tuple[str, ...] = (
    r"claude-(3|opus|sonnet|haiku)",  # every Claude from 3 on (claude-2 and claude-instant are text only)
    r"gpt-4o", r"gpt-4\.1", r"gpt-4\.5", r"gpt-4-turbo", r"gpt-4-vision", r"gpt-5", r"chatgpt-4o",
    r"(^|/)o1($|-2024|-pro)", r"(^|/)o3($|-pro|-2025)", r"(^|/)o4-mini",
    r"llava", r"bakllava", r"vision", r"(^|[-_.:/])vl($|[-_.:/])", r"qwen2(\.5)?-?vl", r"qwen3-vl", r"gemma3", r"gemma-3",
    r"minicpm-v", r"moondream", r"pixtral", r"mistral-small3\.[12]", r"mistral-medium", r"llama-?4", r"gemini",
)
_SEES = re.compile("|".join(VISION_PATTERNS), re.IGNORECASE)
#: text-only models whose names a pattern above would take
_BLIND = re.compile(r"(^|/)o1-mini|(^|/)o3-mini|gpt-5-nano-audio", re.IGNORECASE)

NO_VISION = "this model cannot see images (cog's vision setting: set it to on if it can)"


def sees_images(model: str, setting: str | None = None) -> bool:
    """Whether ``model`` (a model's name, ``provider:`` or not) is sent images: the ``vision``
    setting when it is ``on`` or ``off``, else what its name says."""
    if setting == "on":
        return True
    if setting == "off":
        return False
    name = model.split(":", 1)[1] if model.split(":", 1)[0] in ("openai", "anthropic", "ollama") else model
    return bool(_SEES.search(name)) and not _BLIND.search(name)


def without_images(messages: Sequence[Message]) -> list[Message]:
    """``messages`` with every image replaced by a text saying it was not shown: what a model
    that cannot see reads (the messages without images are the same objects)."""
    out: list[Message] = []
    for m in messages:
        if not m.images:
            out.append(m)
            continue
        notes = "\n".join(image.stand_in(NO_VISION) for image in m.images)
        out.append(m.model_copy(update={"images": [], "content": f"{m.content}\n{notes}" if m.content else notes}))
    return out
