"""``session/list``: the sessions an editor can load — cog's threads of the workspace of ``cwd``
(the ACP session id is the thread id), newest first, a page at a time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import schema as acp_schema

#: sessions per page
PAGE = 50


class ListingMixin:
    """``session/list`` for :class:`cogcli.acp.agent.CogAgent`."""

    async def list_sessions(self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any) -> acp_schema.ListSessionsResponse:
        from cogcli.acp.errors import INTERNAL_ERROR, INVALID_PARAMS, _error
        from cogcli.session import Session
        from workspace_tools.host.files import repository

        where = Path(cwd).expanduser() if cwd else Path.cwd()
        found = repository(where.resolve()) if where.is_dir() else None
        if found is None:
            return acp_schema.ListSessionsResponse(sessions=[])
        try:
            start = int(cursor or 0)
        except ValueError:
            raise _error(INVALID_PARAMS, f"cursor {cursor!r} is not one cog gave") from None
        root = Path(found.work_tree)
        session = Session(root)
        try:
            threads = session.threads(start + PAGE + 1)[start:]
        except Exception as exc:
            raise _error(INTERNAL_ERROR, f"cannot read the thread store of {root}: {exc}") from None
        finally:
            session.close()
        sessions = [
            acp_schema.SessionInfo(session_id=t.id, cwd=str(root), title=_title(t), updated_at=_when(t)) for t in threads[:PAGE]
        ]
        return acp_schema.ListSessionsResponse(sessions=sessions, next_cursor=str(start + PAGE) if len(threads) > PAGE else None)


def _title(thread: Any) -> str | None:
    from cogcli.shown.visible import visible

    title = getattr(thread, "title", None)
    return visible(" ".join(str(title).split())[:120], one_line=True) if title else None


def _when(thread: Any) -> str | None:
    value = getattr(thread, "updated_at", None) or getattr(thread, "created_at", None)
    if value is None:
        return None
    return value if isinstance(value, str) else value.isoformat()
