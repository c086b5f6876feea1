"""The fields of a finished call, declared once: :class:`CallEndFields`.

Three formats carry a finished call, and each is derived from this one declaration:

- :class:`cogcli.contract.result.ToolResult` — what ``invoke_tool`` returns and ``on_tool_result`` gets;
- :class:`cogcli.wire.events.ToolResultEvent` — the ``tool-result`` wire event (camelCase);
- :class:`cogcli.threads.entries.ToolResultMetadata` — what a thread keeps of the call beside what the
  model read (snake_case).

Each format adds only what is its own: how it names the call (``call_id``/``name`` in a result,
``id``/``tool_call_id``/``tool_name`` on the wire, the entry's ``tool_results``), the whole content
(``result``; ``content`` in a thread) and the arguments the call ran with (not on the wire: the
``tool-call-end`` event and a ``tool-update`` carry them). A field added here reaches all three,
and :func:`end_fields` / :func:`from_end_fields` copy them between formats, so nothing lists them
again. This module sits below events, entries and result, and imports none of them.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from cogcli.contract.presentation import ToolPresentation


class CallEndFields(BaseModel):
    """What a finished call came to beside its content. Absent (None) on the wire and in a
    thread when there is nothing to say; :class:`~cogcli.contract.result.ToolResult` narrows
    ``duration_ms`` and ``redacted`` to numbers."""

    # built on first use, as the formats made from it are
    model_config = ConfigDict(defer_build=True)

    #: what the application reads (the shapes of :mod:`cogcli.contract.details`); never part of a model's history
    details: Any = None
    presentation: ToolPresentation | None = None
    error: str | None = None
    error_code: str | None = None
    duration_ms: float | None = None
    #: how many credentials were replaced by ``[REDACTED]`` in the call's content, details,
    #: presentation and error (absent: none)
    redacted: int | None = None


#: the declared fields, in declaration order
END_FIELDS: tuple[str, ...] = tuple(CallEndFields.model_fields)


def end_fields(source: CallEndFields) -> dict[str, Any]:
    """The declared fields of ``source`` as another format takes them (the values themselves, not
    copies; ``redacted`` absent when nothing was)."""
    fields = {name: getattr(source, name) for name in END_FIELDS}
    fields["redacted"] = fields["redacted"] or None
    return fields


def from_end_fields(source: CallEndFields) -> dict[str, Any]:
    """The declared fields ``source`` has a value for: what a format with its own defaults is
    made from (a stored call without a duration gets the result's 0.0)."""
    return {name: value for name in END_FIELDS if (value := getattr(source, name)) is not None}
