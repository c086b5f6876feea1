"""cog's tools inside other people's agents, with the result split kept intact.

One module per framework, each needing its optional extra and importing that framework only when
one of its functions is called (``import cogcli``, ``cog --help`` and ``cog tools`` import none):

- :mod:`cogcli.adapters.pydantic_ai` — ``pip install 'cogcli[pydantic-ai]'``:
  :func:`~cogcli.adapters.pydantic_ai.to_pydantic_ai_tool` → a ``pydantic_ai.Tool`` returning
  ``ToolReturn(return_value=<what the model reads>, metadata={"details", "presentation"})``.
- :mod:`cogcli.adapters.openai_agents` — ``pip install 'cogcli[openai-agents]'``:
  :func:`~cogcli.adapters.openai_agents.to_function_tool` → an ``agents.FunctionTool`` that gives
  the model the content and ``on_result`` the whole :class:`~cogcli.contract.result.ToolResult`.
- :mod:`cogcli.adapters.realtime` — voice sessions (OpenAI Realtime, Gemini Live): the tool
  definitions and a handler from a call event to the reply event, content only; plain dicts, no
  SDK needed (``cogcli[realtime]`` installs the SDKs whose types they match).

Every adapter runs a call the way ``cog tool`` and ``cog mcp`` do (:mod:`cogcli.adapters.shared`):
through :func:`cogcli.contract.invoke.invoke_tool` — or ``Cogitator.invoke_tool`` when given a
``cogitator`` — so the call is validated against the tool's own parameter model, run under its
timeout, and its result and progress redacted; the model reads ``ToolResult.model_text()``, cut
to ``max_result_length`` like in a run; details and presentation go to the application; each
``context.update()`` goes to ``on_update`` as a :class:`~cogcli.contract.context.ToolUpdate` (call id,
tool name, content, details, presentation) and never to the model.
"""

from __future__ import annotations

__all__: list[str] = []
