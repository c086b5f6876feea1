"""What every adapter shares: running one call the way ``cog tool`` and ``cog mcp`` do, and
taking its result apart by reader.

    invoker = Invoker(cogitator=cog, on_update=show_progress, on_result=keep)
    result = await invoker(tool, '{"path": "a.py"}', call_id="call_1")   # a ToolResult
    invoker.model_text(result)      # what the framework's model reads: content, or "Error: …"
    result_metadata(result)         # {"details": …, "presentation": …, "error_code": …}

Nothing here imports a framework; :func:`require` imports one with an error that names the extra.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import logging
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeAlias

from cogcli.contract.tool import Tool

if TYPE_CHECKING:
    from cogcli.contract.context import AbortSignal, UpdateCallback
    from cogcli.contract.result import ToolResult
    from cogcli.loop.runtime import Cogitator
    from cogcli.session import Session

log = logging.getLogger("cogcli")

#: called once per finished call with the whole result (details, presentation, error code)
ResultCallback: TypeAlias = Callable[["ToolResult"], "Any | Awaitable[Any]"]

#: a list of tools, a workspace folder (its tools as ``cog mcp`` serves them), or a Session
ToolSource: TypeAlias = "Sequence[Tool[Any]] | str | os.PathLike[str] | Session"


class MissingExtra(ImportError):
    """An adapter's framework is not installed; the message names the ``pip install`` that adds it."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module`` (a framework an adapter needs), or raise :class:`MissingExtra` saying
    ``pip install 'cogcli[extra]'``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtra(
            f"cogcli.adapters needs {module!r} for this ({exc}); install it with: pip install 'cogcli[{extra}]'",
            name=module,
        ) from None


def _agent_default_max_result_length() -> int:
    from cogcli.loop.agent import Agent

    return int(Agent.__dataclass_fields__["max_result_length"].default)


#: characters of a result's content the framework's model reads, as in cog's own runs (Agent's default)
MAX_RESULT_LENGTH: int = _agent_default_max_result_length()


def tools_of(source: ToolSource) -> list[Tool[Any]]:
    """The cog tools of ``source``: a list of tools as given; a workspace folder's tools made as
    ``cog mcp`` makes them (``Session(root).tools``: its cog.toml / ``[tool.cog]`` settings,
    ``COG_SANDBOX``, secret-file rules); a :class:`~cogcli.session.Session`'s ``tools``."""
    if isinstance(source, (str, os.PathLike)):
        from cogcli.contract.errors import ConfigError
        from cogcli.session import Session

        root = Path(source)
        if not root.is_dir():
            raise ConfigError(f"workspace {root} is not a directory; pass an existing folder or a list of tools")
        return list(Session(root).tools)
    tools = getattr(source, "tools", source)
    listed = list(tools)
    for item in listed:
        if not isinstance(item, Tool):
            raise TypeError(f"expected cog tools (cogcli.Tool), got {type(item).__name__}; make them with cogcli.tool() or workspace_tools(root)")
    return listed


@dataclasses.dataclass(frozen=True, kw_only=True)
class Invoker:
    """Runs a call for an adapter: through ``cogitator.invoke_tool`` when given a
    :class:`~cogcli.loop.runtime.Cogitator`, else :func:`cogcli.contract.invoke.invoke_tool` — the same
    validation, timeout, redaction and spans either way. ``on_update`` gets each
    ``context.update()`` (a :class:`~cogcli.contract.context.ToolUpdate` with the framework's call id);
    ``on_result`` the finished :class:`~cogcli.contract.result.ToolResult` (a callback that raises is
    logged, the call goes on); the model reads :meth:`model_text`."""

    cogitator: Cogitator | None = None
    on_update: UpdateCallback | None = None
    on_result: ResultCallback | None = None
    #: characters of content the model reads; the rest is cut with a visible marker (None: all)
    max_result_length: int | None = MAX_RESULT_LENGTH

    async def __call__(
        self,
        tool: Tool[Any] | str,
        arguments: Mapping[str, Any] | str | None,
        *,
        call_id: str | None = None,
        tools: Mapping[str, Tool[Any]] | None = None,
        signal: AbortSignal | None = None,
    ) -> ToolResult:
        """Run one call (``arguments`` as a dict, or the JSON text the model sent) and hand its
        result to ``on_result``. Never raises for a failed call: the result carries the error."""
        from cogcli.contract.result import new_call_id

        call_id = call_id or new_call_id()
        if self.cogitator is not None:
            result = await self.cogitator.invoke_tool(
                tool, arguments, tools=tools, call_id=call_id, on_update=self.on_update, signal=signal
            )
        else:
            from cogcli.contract.invoke import invoke_tool

            result = await invoke_tool(tool, arguments, tools=tools, call_id=call_id, on_update=self.on_update, signal=signal)
        await self._notify(result)
        return result

    async def _notify(self, result: ToolResult) -> None:
        if self.on_result is None:
            return
        try:
            returned = self.on_result(result)
            if inspect.isawaitable(returned):
                await returned
        except Exception:
            log.warning("on_result failed for %s; the call goes on", result.name, exc_info=True)

    def model_text(self, result: ToolResult) -> str:
        """What the framework's model reads of ``result``: its content as text, cut to
        ``max_result_length``, or ``Error: <message>`` — what cog's own runs send their model."""
        return result.model_text(self.max_result_length)


def result_metadata(result: ToolResult) -> dict[str, Any]:
    """What the application keeps of a call and the model never reads, as JSON values:
    ``details``, ``presentation`` (label, icon, detail) and ``error_code`` (None when it ran)."""
    presentation = None if result.presentation is None else result.presentation.model_dump(mode="json", exclude_none=True)
    return {"details": result.details, "presentation": presentation, "error_code": result.error_code}


__all__ = ["MAX_RESULT_LENGTH", "Invoker", "MissingExtra", "ResultCallback", "ToolSource", "require", "result_metadata", "tools_of"]
