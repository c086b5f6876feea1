"""A tool's result split by reader: ``content`` for the model, ``details`` for the app, ``presentation`` for clients."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_serializer

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
    if isinstance(content, ImageContent):
        return content.text
    return json.dumps(content, ensure_ascii=False)


def truncate_text(text: str, max_length: int | None) -> str:
    """Cut ``text`` to ``max_length`` characters with a visible marker saying how much was cut."""
    if max_length is None or len(text) <= max_length:
        return text
    cut = len(text) - max_length
    return f"{text[:max_length]}\n…[{cut} characters cut]"


#: the image formats every vision model cog speaks to accepts (Anthropic, OpenAI: the same four)
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class ImagePart(BaseModel):
    """An image a model sees, provider-neutral: each client maps it to its own block (Anthropic
    ``image`` with a base64 source, Chat Completions ``image_url`` with a data URL, Responses
    ``input_image``). ``data`` is the base64 of the bytes sent; the other fields are facts about
    them, what a person or an application reads."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    type: Literal["image"] = "image"
    media_type: Literal["image/png", "image/jpeg", "image/gif", "image/webp"]
    #: base64 of the bytes (no data: prefix)
    data: str = Field(repr=False)
    width: int
    height: int
    #: what the image is, for a text that stands in for it (a path, "attached image")
    name: str = ""

    @property
    def size(self) -> int:
        """Bytes of the image itself (the base64 decoded)."""
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{self.data}"

    def facts(self) -> dict[str, Any]:
        """The image without its bytes: what events, JSON lines and a thread's metadata carry."""
        return {"type": "image", "media_type": self.media_type, "width": self.width, "height": self.height, "bytes": self.size, "name": self.name}

    def stand_in(self, why: str) -> str:
        """The text a model reads in place of this image when it cannot be sent (``why``)."""
        return f"[image {self.name or 'attached'} ({self.media_type}, {self.width}×{self.height}) not shown: {why}]"


class ImageContent(BaseModel):
    """The content of a result that is an image: ``text`` (what it is, which the model reads in
    any case) and ``image`` (what a vision model sees). Serialized — on the wire, in JSON lines, in
    a thread's metadata, through the redactor — as the text and the image's :meth:`~ImagePart.facts`:
    the bytes travel only in the history a model reads (and its copy in the thread), never as
    megabytes of base64 in an event."""

    model_config = ConfigDict(frozen=True, defer_build=True)

    text: str
    image: ImagePart

    @model_serializer(mode="plain")
    def _facts(self) -> dict[str, Any]:
        return {"text": self.text, "image": self.image.facts()}


def content_images(content: Any) -> list[ImagePart]:
    """The images a model sees of a content value (none but an :class:`ImageContent`'s)."""
    return [content.image] if isinstance(content, ImageContent) else []
