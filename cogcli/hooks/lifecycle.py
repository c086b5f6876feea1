"""Hooks around a run as a whole: ``SessionStart`` and ``UserPromptSubmit`` before the model reads
the prompt, ``PreCompact`` before the history is compacted, ``Stop`` when the model is done, and the
``Notification`` sent while the run waits for the person's approval
(by the gate's :class:`~cogcli.gate.pipeline.ApprovalStep`).

- SessionStart (``source``: ``startup`` for a new thread, ``resume`` for the session's first run in
  an existing one) and UserPromptSubmit (``prompt``): their ``additionalContext`` — or plain stdout —
  is added after the prompt the model reads. A UserPromptSubmit block (exit 2, ``"decision":
  "block"``) ends the run ``denied`` before anything is sent or kept; the reason goes to the person.
- Stop (``stop_hook_active``, ``last_assistant_message``): a block sends the model back to work
  with the reason as the next message, as Claude Code does; ``stop_hook_active`` is true then, so a
  hook can let the run end the second time.
- SubagentStart / SubagentStop (``agent_id``: the subagent's thread, ``agent_type``: its agent's
  name, matched by the matcher; ``session_id`` the parent's thread): Start's ``additionalContext``
  is added to the subagent's prompt; a SubagentStop block sends the subagent back to work, as Stop does.
- PreCompact (``trigger``: ``auto``; matcher on it): told before; it cannot stop a compaction.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any


from cogcli.hooks.engine import RunHooks, context_note


class PromptBlocked(Exception):
    """A UserPromptSubmit hook blocked the prompt: nothing is sent to the model."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def before_prompt(hooks: RunHooks, prompt: str, *, new_thread: bool) -> str:
    """The prompt as the model reads it, after SessionStart (once per thread in a session) and
    UserPromptSubmit. Raises :class:`PromptBlocked`."""
    notes: list[str] = []
    started = hooks.set.started
    if hooks.thread_id not in started:
        started.add(hooks.thread_id)
        source = "startup" if new_thread else "resume"
        verdict = await hooks.fire("SessionStart", {"source": source}, target=source)
        notes.append(context_note("SessionStart", verdict.contexts))
    verdict = await hooks.fire("UserPromptSubmit", {"prompt": prompt})
    if verdict.blocked:
        raise PromptBlocked(verdict.reason or "a UserPromptSubmit hook blocked the prompt")
    notes.append(context_note("UserPromptSubmit", verdict.contexts))
    notes = [n for n in notes if n]
    if not notes:
        return prompt
    from cogcli.secrets.redactor import redact

    return prompt + "\n\n" + redact("\n\n".join(notes))[0]


async def at_stop(hooks: RunHooks, last_message: str, *, active: bool, event: str = "Stop") -> str | None:
    """The Stop hooks' (a subagent's: SubagentStop's) reason to go on (the model's next message), or None to end the run."""
    target = hooks.agent.get("agent_type")
    verdict = await hooks.fire(event, {"stop_hook_active": active, "last_assistant_message": last_message}, target=target)
    if not verdict.blocked:
        return None
    from cogcli.secrets.redactor import redact

    return redact(f"[{event} hook] {verdict.reason or f'a {event} hook asked you to go on'}")[0]


async def subagent_start(hooks: RunHooks, prompt: str) -> str:
    """A subagent's prompt after the SubagentStart hooks (matcher: the agent's name): their
    ``additionalContext`` is added after it, as Claude Code adds it to the subagent's context."""
    verdict = await hooks.fire("SubagentStart", {}, target=hooks.agent.get("agent_type"))
    note = context_note("SubagentStart", verdict.contexts)
    if not note:
        return prompt
    from cogcli.secrets.redactor import redact

    return prompt + "\n\n" + redact(note)[0]


def pre_compact(hooks: RunHooks) -> Callable[[str], Awaitable[Any]]:
    """What the run's context budget awaits before it compacts."""

    async def told(reason: str) -> None:
        await hooks.fire("PreCompact", {"trigger": "auto", "reason": reason, "custom_instructions": ""}, target="auto")

    return told
