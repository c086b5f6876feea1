"""Slash commands over ACP: what the editor offers in its prompt (``available_commands_update``,
sent after ``session/new`` and ``session/load``) and what a prompt starting with ``/NAME`` does.

Built in: ``/plan [instruction]`` (plan mode, :mod:`cogcli.acp.modes`; with an instruction, run it
so), ``/go [note]`` (leave plan mode and carry out the plan). Then the custom commands of
``.agents/commands`` and ``~/.config/cog/commands`` (:mod:`cogcli.project.custom_commands`): their text is
the turn's instruction. A custom command's ``model`` is not used here (the editor's session keeps
its model); any other ``/word`` goes to the model as it is typed.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from acp import schema as acp_schema

from cogcli.acp.modes import ASK, PLAN
from cogcli.project.custom_commands import builtin_names, load_commands, parse_command_line
from cogcli.gate.plan_mode import GO

log = logging.getLogger("cogcli")

BUILT_IN = [
    acp_schema.AvailableCommand(
        name="plan", description="Plan mode: only read and search, then a plan (with an instruction: plan it)",
        input=acp_schema.AvailableCommandInput(root=acp_schema.UnstructuredCommandInput(hint="what to plan")),
    ),
    acp_schema.AvailableCommand(
        name="go", description="Leave plan mode and carry out the plan",
        input=acp_schema.AvailableCommandInput(root=acp_schema.UnstructuredCommandInput(hint="a note for the agent")),
    ),
    # answered by cogcli.threads.rewind, with no model turn (see cogcli.acp.agent._slash_command)
    acp_schema.AvailableCommand(
        name="undo", description="Put back the files of the newest run not undone yet (again: walk further back); the model is told",
        input=acp_schema.AvailableCommandInput(root=acp_schema.UnstructuredCommandInput(hint="a run number to walk back to (optional)")),
    ),
    acp_schema.AvailableCommand(
        name="rewind", description="List this session's runs; with N, walk back to before run N (files and conversation)",
        input=acp_schema.AvailableCommandInput(root=acp_schema.UnstructuredCommandInput(hint="N [both|code|conversation]")),
    ),
    acp_schema.AvailableCommand(
        name="jobs", description="Background commands: the session's and those kept earlier in this workspace; kill ends one, keep keeps one",
        input=acp_schema.AvailableCommandInput(root=acp_schema.UnstructuredCommandInput(hint="kill ID|PID, keep ID (optional)")),
    ),
    acp_schema.AvailableCommand(  # answered by cogcli.acp.attempts (best-of-N)
        name="attempts", description="Best-of-N: N attempts side by side in git worktrees, the tests pick one, applied here",
        input=acp_schema.AvailableCommandInput(root=acp_schema.UnstructuredCommandInput(hint="N instruction")),
    ),
]


def available_commands(root: Path) -> acp_schema.AvailableCommandsUpdate:
    """The built-in commands, then the workspace's and the person's (their text escaped)."""
    from cogcli.shown.visible import visible

    custom = [
        acp_schema.AvailableCommand(
            name=c.name, description=visible(c.description, one_line=True) or c.shown,
            input=acp_schema.AvailableCommandInput(root=acp_schema.UnstructuredCommandInput(hint=visible(c.hint, one_line=True))) if c.hint else None,
        )
        for c in load_commands(root, builtin_names())
    ]
    return acp_schema.AvailableCommandsUpdate(session_update="available_commands_update", available_commands=[*BUILT_IN, *custom])


def announce(conn: Any, session_id: str, root: Path) -> None:
    """Send the commands once the response that names the session is out (the editor knows it then)."""

    async def send() -> None:
        for _ in range(3):  # the response to session/new or load is written first
            await asyncio.sleep(0)
        try:
            await conn.session_update(session_id, available_commands(root))
        except Exception as exc:
            log.debug("the available commands could not be sent: %s", exc)

    asyncio.ensure_future(send())


async def command_instruction(agent: Any, opened: Any, text: str) -> str | None:
    """The instruction a prompt stands for: ``/plan`` and ``/go`` switch the mode first (None: no
    run, only the switch); a custom command's text; anything else as it is."""
    parsed = parse_command_line(text.strip())
    if parsed is None:
        return text
    name, arguments = parsed
    if name == "plan":
        await agent.switch_mode(opened, PLAN)
        return arguments or None
    if name == "go":
        if opened.mode == PLAN:
            await agent.switch_mode(opened, ASK)
        return f"{GO}\n\n{arguments}" if arguments else GO
    invocation = load_commands(opened.root, builtin_names()).resolve(text.strip())
    return invocation.instruction if invocation is not None else text
