"""How a client draws a tool call: a label for people, an optional icon and detail line."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias

from pydantic import BaseModel, ConfigDict

log = logging.getLogger("cogcli")


class ToolPresentation(BaseModel):
    """What a list of steps needs to draw one call: ``Edit file · src/a.py``.

    ``icon`` is an icon name the client knows (Lucide names by convention);
    it is never printed as text by cog's own renderers.
    """

    model_config = ConfigDict(extra="allow", frozen=True)

    label: str
    icon: str | None = None
    detail: str | None = None


PresentationLike: TypeAlias = ToolPresentation | Mapping[str, Any]
PresentationSpec: TypeAlias = PresentationLike | Callable[[Any], PresentationLike | None] | None


def as_presentation(value: PresentationLike | None) -> ToolPresentation | None:
    """Coerce a dict (or ``None``) to a :class:`ToolPresentation`."""
    if value is None or isinstance(value, ToolPresentation):
        return value
    return ToolPresentation.model_validate(value)


def resolve_presentation(spec: PresentationSpec, params: Any, tool_name: str) -> ToolPresentation | None:
    """The tool's own presentation for a call: static, or computed from the parsed arguments.

    A presentation function that raises (or returns garbage) leaves the call without a
    presentation; the problem is logged and the call itself is not failed.
    """
    if spec is None:
        return None
    try:
        value = spec(params) if callable(spec) else spec
        return as_presentation(value)
    except Exception:
        log.warning("presentation of tool %r failed; the call is shown without one", tool_name, exc_info=True)
        return None


def presentation_json_schema() -> dict[str, Any]:
    """JSON Schema of :class:`ToolPresentation`, for clients that validate what they read."""
    return ToolPresentation.model_json_schema()
