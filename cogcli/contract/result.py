"""A finished call: the one result type from ``invoke_tool`` to the wire to memory.

Every outcome of a call — it ran, failed, was refused, aborted, or never ran because the model's
stream was cut — ends as one :class:`ToolResult`. What each reader gets is made from it here:

- ``on_tool_result`` and ``invoke_tool``'s caller get the result itself;
- the model reads :meth:`ToolResult.model_text`;
- the ``tool-result`` wire event is :meth:`cogcli.wire.events.ToolResultEvent.of` the result;
- memory keeps :meth:`cogcli.threads.entries.ToolResultEntry.of` it, and a stored thread is redrawn
  from :meth:`~cogcli.threads.entries.ToolResultEntry.results` → ``ToolResultEvent.of``, so the rows
  are the live run's.

The contract knows neither format: they are made from it, above it.
"""

from __future__ import annotations

import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict

from cogcli.contract.call_fields import CallEndFields
from cogcli.contract.output import ImagePart, content_images, content_text, truncate_text


class _ToolResultHead(BaseModel):
    call_id: str
    name: str
    #: the arguments the call ran with, as the model meant them (see :func:`cogcli.contract.prepare.parse_arguments`)
    arguments: Any = None
    #: the whole content (what the model reads, before truncation)
    result: Any = None


# the declared fields after the head's (a base listed first comes last in pydantic's field order)
class ToolResult(CallEndFields, _ToolResultHead):
    """One finished call, as ``on_tool_result`` gets it: ``result`` is the whole content,
    ``details`` and ``presentation`` sit beside it (the fields of
    :class:`~cogcli.contract.call_fields.CallEndFields`). Only :meth:`model_text` reaches a model."""

    model_config = ConfigDict(frozen=True)

    duration_ms: float = 0.0
    #: credentials replaced by ``[REDACTED]`` in ``result``/``details``/``presentation``/``error`` before anyone read them
    redacted: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None

    def model_text(self, max_length: int | None = None) -> str:
        """What a model reads of this call: the content (cut to ``max_length``) or the error message."""
        if self.error is not None:
            return _sendable(truncate_text(f"Error: {self.error}", max_length))
        return _sendable(truncate_text(content_text(self.result), max_length))

    def model_images(self) -> list[ImagePart]:
        """The images a model sees of this call beside :meth:`model_text` (a ``read_file`` of an image)."""
        return [] if self.error is not None else content_images(self.result)


def _sendable(text: str) -> str:
    """``text`` with any lone surrogate (a file name that is not UTF-8, as Python decodes it) written
    as a visible ``\\udcXX`` escape: what a model reads must encode as UTF-8 to be sent or stored."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


def new_call_id() -> str:
    return f"call_{uuid.uuid4().hex[:16]}"
