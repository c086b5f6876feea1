"""A tool's result split by reader: ``content`` for the model, ``details`` for the app, ``presentation`` for clients."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from cogcli.contract.presentation import PresentationLike, ToolPresentation, as_presentation

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ToolOutputResult(Generic[T]):
    """Built by :func:`tool_output`. Only ``content`` ever reaches a model."""

    content: T
    details: Any = None
    presentation: ToolPresentation | None = None


def tool_output(
    content: T, details: Any = None, presentation: PresentationLike | None = None
) -> ToolOutputResult[T]:
    """Split a result: ``content`` is what the model reads, ``details`` only the application sees,
    ``presentation`` tells a client how to draw the call."""
    return ToolOutputResult(content=content, details=details, presentation=as_presentation(presentation))


def is_tool_output_result(value: object) -> bool:
    """True for a result built by :func:`tool_output`, False for any other value."""
    return isinstance(value, ToolOutputResult)


def tool_output_content(value: Any) -> Any:
    """What a model reads of any result: a ``tool_output()`` result's content, anything else as it is."""
    return value.content if isinstance(value, ToolOutputResult) else value


def content_text(content: Any) -> str:
    """The text a model reads for a content value: strings as they are, anything else as JSON."""
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def truncate_text(text: str, max_length: int | None) -> str:
    """Cut ``text`` to ``max_length`` characters with a visible marker saying how much was cut."""
    if max_length is None or len(text) <= max_length:
        return text
    cut = len(text) - max_length
    return f"{text[:max_length]}\n…[{cut} characters cut]"
