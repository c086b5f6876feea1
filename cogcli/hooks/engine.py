"""The hooks of a session (:class:`HookSet`) and of one run (:class:`RunHooks`): which hooks an
event runs, the JSON each gets on stdin, their answers folded into one :class:`Verdict`, and a
``hook`` event on the wire for each hook that ran.

Every hook an event matches runs at once (as in Claude Code); their answers combine: any deny
blocks (every reason is told), else any ``ask`` asks, else an ``allow`` allows; contexts add up;
the last ``updatedInput`` wins.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio

from cogcli.settings.hook_tables import EVENTS, HookSpec, HookTables, compile_matcher
from cogcli.hooks.process import hook_environment, run_hook_command
from cogcli.hooks.answer import Decision, Reply, read_reply

log = logging.getLogger("cogcli")

#: where a hook was configured: the person's config.toml, or the workspace's file (approved with cog trust)
PERSON = "config.toml"
#: events whose hooks an abort does not stop: a call ending ABORTED is still told to PostToolUse
UNSTOPPED = frozenset({"PostToolUse"})


@dataclass(frozen=True)
class Configured:
    """One hook as configured, and where it came from."""
    spec: HookSpec
    #: ``config.toml`` (the person's) or the workspace file it came from
    source: str
    test: Callable[[str], bool]
    #: where it runs: a workspace hook's approved copy (:mod:`cogcli.hooks.snapshot`); None: the workspace root
    folder: Path | None = None


@dataclass
class Verdict:
    """What the hooks of one event said together."""

    decision: Decision | None = None
    reasons: list[str] = field(default_factory=list)
    contexts: list[str] = field(default_factory=list)
    updated_input: dict[str, Any] | None = None
    stop: bool = False
    stop_reasons: list[str] = field(default_factory=list)
    ran: int = 0

    @property
    def blocked(self) -> bool:
        return self.decision == "deny"

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)

    @property
    def context(self) -> str:
        return "\n\n".join(self.contexts)


class HookSet:
    """The hooks a session runs: the person's, then the workspace's ones the person approved, each
    run from its approved copy (``copies``: (event, hook) → folder; a workspace hook
    without one is a programming error, never run from the workspace)."""

    def __init__(
        self, root: Path, person: HookTables | None = None, workspace: HookTables | None = None, workspace_source: str = "cog.toml",
        copies: Mapping[tuple[str, HookSpec], Path] | None = None,
    ) -> None:
        self.root = root
        #: snapshots before the hooks of an event and records after them, for cog undo
        #: (:class:`workspace_tools.shell.command_undo.CommandUndo`; the session sets it)
        self.undo: Any = None
        #: the threads a run of this session ran in (SessionStart fires once per thread)
        self.started: set[str] = set()
        self.hooks: dict[str, list[Configured]] = {}
        copies = copies or {}
        for tables, source in ((person or {}), PERSON), ((workspace or {}), workspace_source):
            for event, specs in tables.items():
                for spec in specs:
                    folder = None if source == PERSON else copies.get((event, spec))
                    if source != PERSON and folder is None:
                        raise ValueError(f"the workspace hook {spec.command!r} has no approved copy to run from (hooks.trust.session_hooks)")
                    self.hooks.setdefault(event, []).append(Configured(spec, source, compile_matcher(spec.matcher), folder))

    def __bool__(self) -> bool:
        return any(self.hooks.values())

    def matching(self, event: str, target: str | None) -> list[Configured]:
        found = self.hooks.get(event, [])
        return found if target is None else [h for h in found if h.test(target)]

    def bind(
        self, emit: Callable[[Any], Any], thread_id: str, *, permission_mode: str = "default", cwd: Path | None = None, signal: Any = None,
    ) -> RunHooks:
        return RunHooks(self, emit, thread_id, permission_mode=permission_mode, cwd=cwd or self.root, signal=signal)


class RunHooks:
    """A :class:`HookSet` bound to one run: its events go to the run's emitter, its payloads
    carry the run's thread id."""

    def __init__(self, hooks: HookSet, emit: Callable[[Any], Any], thread_id: str, *, permission_mode: str, cwd: Path, signal: Any = None) -> None:
        self.set, self.emit, self.thread_id = hooks, emit, thread_id
        self.permission_mode, self.cwd = permission_mode, cwd
        #: the run's abort signal: it stops the hooks that run (killed) but those of calls ending (PostToolUse)
        self.signal = signal
        #: PreToolUse contexts waiting for their call's result (call id → texts)
        self.pending_context: dict[str, list[str]] = {}
        #: a hook said ``"continue": false``: why (the run stops at its next step)
        self.stop_reason: str | None = None
        #: a subagent's run: ``agent_id`` (its thread) and ``agent_type`` (its agent's name), in every payload
        self.agent: dict[str, str] = {}

    def has(self, event: str) -> bool:
        return bool(self.set.hooks.get(event))

    def payload(self, event: str, fields: Mapping[str, Any]) -> dict[str, Any]:
        """Claude Code's common fields, then the event's own."""
        return {
            "session_id": self.thread_id,
            "transcript_path": None,  # cog keeps threads in .cog/threads.db, not a transcript file
            "cwd": str(self.cwd),
            "hook_event_name": event,
            "permission_mode": self.permission_mode,
            **self.agent,
            **fields,
        }

    async def fire(
        self, event: str, fields: Mapping[str, Any], *, target: str | None = None, call_id: str | None = None, tool_name: str | None = None,
    ) -> Verdict:
        """Run every hook of ``event`` whose matcher takes ``target`` (the tool name, the source,
        the trigger; None: every hook of the event) and fold their answers."""
        assert event in EVENTS, event
        hooks = self.set.matching(event, target)
        verdict = Verdict()
        if not hooks:
            return verdict
        data = json.dumps(self.payload(event, fields), default=_jsonable).encode("utf-8")
        replies: list[Reply | None] = [None] * len(hooks)

        async def one(i: int, hook: Configured) -> None:
            env = hook_environment(self.set.root, hook.spec.pass_env, folder=hook.folder)
            finished = await run_hook_command(hook.spec.command, data, cwd=hook.folder or self.set.root, env=env, timeout=hook.spec.timeout)
            reply = replies[i] = read_reply(event, finished)
            self._report(event, hook, finished, reply, call_id, tool_name)

        undo = self.set.undo
        record = None
        if undo is not None and undo.active:  # a hook may change files (a formatter after an edit): snapshot first
            from anyio import to_thread

            record = await to_thread.run_sync(undo.start, f"hook: {event}: " + "; ".join(h.spec.command for h in hooks))
        try:
            async with anyio.create_task_group() as outer:
                if self.signal is not None and event not in UNSTOPPED:
                    from cogcli.contract.context import cancel_on_abort

                    outer.start_soon(cancel_on_abort, self.signal, outer.cancel_scope)  # an abort kills the hooks running
                async with anyio.create_task_group() as tg:
                    for i, hook in enumerate(hooks):
                        tg.start_soon(one, i, hook)
                outer.cancel_scope.cancel()
        finally:
            if record is not None:  # what the hooks changed, recorded for cog undo
                from anyio import to_thread

                with anyio.CancelScope(shield=True):
                    await to_thread.run_sync(record)
        for reply in replies:
            if reply is not None:
                _fold(verdict, reply)
        verdict.ran = len(hooks)
        if verdict.stop and self.stop_reason is None:
            self.stop_reason = "; ".join(verdict.stop_reasons) or f"a {event} hook stopped the run"
        return verdict

    def _report(self, event: str, hook: Configured, finished: Any, reply: Reply, call_id: str | None, tool_name: str | None) -> None:
        from cogcli.wire.events import HookEvent
        from cogcli.secrets.redactor import redact_value

        if reply.outcome == "error":
            from cogcli.shown.visible import visible

            log.warning("the %s hook %s failed: %s; the run goes on", event, visible(hook.spec.command, one_line=True), visible(reply.problem or ""))
        fields = {
            "reason": reply.reason, "message": reply.system_message or reply.problem or reply.stop_reason,
            "additional_context": reply.additional_context, "stderr": finished.stderr[-4000:] or None, "command": hook.spec.command,
        }
        fields = redact_value(fields)[0]
        self.emit(HookEvent(
            hook_event_name=event, source=hook.source, matcher=hook.spec.matcher or None,
            tool_call_id=call_id, tool_name=tool_name, outcome=reply.outcome, exit_code=finished.exit_code,
            timed_out=finished.timed_out or None, decision=reply.decision, updated_input=reply.updated_input is not None or None,
            duration_ms=finished.duration_ms, **fields,
        ))


def _fold(verdict: Verdict, reply: Reply) -> None:
    if reply.outcome == "error":
        return
    if reply.decision == "deny" or reply.outcome == "blocked":
        verdict.decision = "deny"
    elif reply.decision == "ask" and verdict.decision != "deny":
        verdict.decision = "ask"
    elif reply.decision == "allow" and verdict.decision is None:
        verdict.decision = "allow"
    if reply.reason and (reply.outcome == "blocked" or reply.decision in ("deny", "ask")):
        verdict.reasons.append(reply.reason)
    if reply.additional_context:
        verdict.contexts.append(reply.additional_context)
    if reply.updated_input is not None:
        verdict.updated_input = reply.updated_input
    if reply.stop:
        verdict.stop = True
        if reply.stop_reason:
            verdict.stop_reasons.append(reply.stop_reason)


def _jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json", exclude_none=True)
    return str(value)


def context_note(event: str, texts: Sequence[str]) -> str:
    """How hooks' ``additionalContext`` reads to the model."""
    return "\n\n".join(f"[{event} hook] {t}" for t in texts)
