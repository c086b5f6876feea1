"""What one hook said: its exit code and stdout read on Claude Code's contract.

- exit 0: go on. Stdout may be one JSON object; cog reads both of Claude Code's shapes:
  ``{"decision": "block" | "approve", "reason": …}`` and
  ``{"hookSpecificOutput": {"permissionDecision": "allow" | "deny" | "ask",
  "permissionDecisionReason": …, "updatedInput": {…}, "additionalContext": …}}`` (plus the
  common ``continue``, ``stopReason``, ``systemMessage``). Stdout that is not JSON is context for
  the model on ``SessionStart`` and ``UserPromptSubmit`` (as in Claude Code) and ignored elsewhere.
- exit 2: block; stderr says why.
- anything else (or a timeout, or a hook that cannot start): a warning; the run goes on.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from cogcli.hooks.process import Finished

Decision = Literal["allow", "deny", "ask"]
#: how Claude Code's older ``decision`` values read
_DECISIONS: dict[str, Decision] = {"allow": "allow", "approve": "allow", "deny": "deny", "block": "deny", "ask": "ask"}
#: the events whose plain (non-JSON) stdout is context for the model
PLAIN_CONTEXT = frozenset({"SessionStart", "UserPromptSubmit"})
MAX_REASON = 8000


@dataclass(frozen=True)
class Reply:
    """One hook's answer, normalized."""

    #: ok (exit 0), blocked (exit 2, or a deny decision), error (another exit, a timeout, no start)
    outcome: Literal["ok", "blocked", "error"]
    decision: Decision | None = None
    reason: str | None = None
    additional_context: str | None = None
    #: new arguments for the call (PreToolUse)
    updated_input: dict[str, Any] | None = None
    #: ``"continue": false``: the run stops (``stop_reason`` says why, to the person)
    stop: bool = False
    stop_reason: str | None = None
    #: ``systemMessage``: a line for the person
    system_message: str | None = None
    #: what went wrong, for the warning (outcome ``error``), or a note (stdout that was not JSON)
    problem: str | None = None


def read_reply(event: str, finished: Finished) -> Reply:
    if finished.failed is not None:
        return Reply("error", problem=finished.failed)
    if finished.timed_out:
        return Reply("error", problem="it passed its timeout and was killed")
    if finished.exit_code == 2:
        return Reply("blocked", decision="deny", reason=_cut(finished.stderr.strip()) or "a hook blocked it (exit 2)")
    if finished.exit_code != 0:
        why = _cut(finished.stderr.strip().splitlines()[-1]) if finished.stderr.strip() else "no message"
        return Reply("error", problem=f"it exited with {finished.exit_code} ({why})")
    text = finished.stdout.strip()
    if not text:
        return Reply("ok")
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        if event in PLAIN_CONTEXT:
            return Reply("ok", additional_context=_cut(text))
        note = "its stdout is not a JSON object; ignored" if text.startswith("{") else None
        return Reply("ok", problem=note)
    return _from_json(data)


def _from_json(data: dict[str, Any]) -> Reply:
    specific = data.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    decision = _DECISIONS.get(str(specific.get("permissionDecision") or data.get("decision") or "").lower())
    reason = _string(specific.get("permissionDecisionReason")) or _string(data.get("reason"))
    context = _string(specific.get("additionalContext")) or _string(data.get("additionalContext"))
    updated = next((v for v in (specific.get("updatedInput"), data.get("updatedInput"), data.get("tool_input")) if isinstance(v, dict)), None)
    stop = data.get("continue") is False
    return Reply(
        "blocked" if decision == "deny" else "ok",
        decision=decision,
        reason=reason,
        additional_context=context,
        updated_input=updated,
        stop=stop,
        stop_reason=_string(data.get("stopReason")),
        system_message=_string(data.get("systemMessage")),
    )


def _string(value: Any) -> str | None:
    return _cut(value) if isinstance(value, str) and value.strip() else None


def _cut(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[:MAX_REASON] + f"… [{len(text) - MAX_REASON:,} more characters]"
