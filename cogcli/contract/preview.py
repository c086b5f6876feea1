"""What a call would do, computed without doing it: shown when it asks for approval, held to when it runs.

A tool that can tell what a call will do declares ``preview=(params, context) -> Preview | dict |
None`` (:attr:`cogcli.contract.tool.Tool.preview`). Before the run asks for approval it calls it, once per
call, in call order; what it returns reaches the two places that need it, and only those:

- ``Preview.shown`` — what a person sees: ``{"path", "diff", "added", "removed"}`` for a file
  change, ``{"command"}`` for a command. It is redacted like details and carried by the
  ``approval-required`` entry as ``Approval.preview`` (:func:`cogcli.gate.pipeline.approval_for`).
- ``Preview.basis`` — the tool's own, never shown: what the preview was computed from. The prepared
  call that is approved carries its preview (:attr:`cogcli.contract.prepare.PreparedCall.preview`) and the run
  hands it to ``execute`` as ``context.approved``: the tool checks the workspace is still what the
  person saw and refuses otherwise (``FILE_CHANGED``), so an approved call never applies a change
  other than the one shown. While previewing, ``context.planned`` is the preview of the call before
  this one in the turn on the same path (:meth:`~cogcli.contract.prepare.PreparedCall.order_key`), which runs
  first: two edits of one file in one turn are each shown as they will apply.

A preview that raises a :class:`~cogcli.contract.errors.CogError` says the call cannot work (``old_text``
not found): the call ends with that error and nobody is asked. Any other exception (or a preview
slower than ``cogcli.contract.invoke.PREVIEW_TIMEOUT_S``) is logged and the call ends unasked too: nobody is
asked about a call without the preview it should have.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Preview:
    """What a call would do, shown before it is approved."""
    #: what people see (``Approval.preview``), redacted before it leaves the run; None: nothing to show
    shown: dict[str, Any] | None
    #: the tool's own record of what the preview was computed from (see the module's text)
    basis: Any = None


def as_preview(value: Any) -> Preview | None:
    """What a tool's ``preview`` returned, as a :class:`Preview` (a plain dict is what is shown)."""
    if value is None or isinstance(value, Preview):
        return value
    if isinstance(value, dict):
        return Preview(value)
    raise TypeError(f"a preview must be a dict, a Preview or None, not {type(value).__name__}")


@dataclass(frozen=True, slots=True)
class FileBasis:
    """What a file change's preview was computed from: the file (resolved path), the sha256 of its
    bytes then (None: there was no file) and the bytes the change writes."""

    path: str
    sha256: str | None
    after: bytes


def sha256_of(data: bytes | None) -> str | None:
    return None if data is None else hashlib.sha256(data).hexdigest()


def file_preview(shown_path: str, diff: str, basis: FileBasis) -> Preview:
    """The preview of a change to one file: ``{"path", "diff", "added", "removed"}`` for people,
    ``basis`` for the call that applies it."""
    from cogcli.contract.diffstat import diff_totals

    added, removed = diff_totals(diff)
    return Preview({"path": shown_path, "diff": diff, "added": added, "removed": removed}, basis)


def planned_bytes(context: Any, path: str) -> bytes | None:
    """While previewing: the bytes an earlier call of the turn will have left in ``path`` (resolved)
    when this call runs (``context.planned``), None when no earlier call changes it."""
    planned = getattr(context, "planned", None)
    basis = getattr(planned, "basis", None)
    return basis.after if isinstance(basis, FileBasis) and basis.path == path else None


def check_approved(context: Any, path: str, current: bytes | None, shown_path: str) -> None:
    """When the call runs: raise ``FILE_CHANGED`` unless ``path`` (resolved) still holds what its
    approved preview was computed from (``current``: its bytes now, None: no file). Nothing is
    written then: the person approved a change to other content."""
    approved = getattr(context, "approved", None)
    basis = getattr(approved, "basis", None)
    if not isinstance(basis, FileBasis) or basis.path != path or basis.sha256 == sha256_of(current):
        return
    from cogcli.contract.errors import ErrorCode, ToolCallError

    raise ToolCallError(
        f"{shown_path} is not what it was when this change was shown for approval (another program changed it, or "
        "an earlier change of this turn it was shown on top of did not happen); nothing was written. "
        "Read the file again and redo the change.",
        code=ErrorCode.FILE_CHANGED,
    )
