"""Reading another agent's session for ``cog thread import``: which format a file is, and its
conversation as plain pieces (:class:`Piece`), for :mod:`cogcli.threads.imported` to bound,
redact and store.

- **ATIF** (Harbor's Agent Trajectory Interchange Format, v1.x; what ``cog thread export`` writes):
  one JSON document, ``steps`` with ``source`` user/agent/system, ``message`` (text, or content
  parts), ``tool_calls`` (``tool_call_id``, ``function_name``, ``arguments``) and
  ``observation.results`` (``source_call_id``, ``content``). A ``system`` step is another agent's
  system prompt and is left out, unless it carries an observation (cog's compaction summary).
- **Claude Code** (``~/.claude/projects/<slug>/<uuid>.jsonl``): one record a line, ``type``
  user/assistant (``message`` in the Anthropic Messages shape: blocks ``text``, ``thinking``,
  ``tool_use`` {id, name, input}, ``tool_result`` {tool_use_id, content, is_error}), ``summary``,
  ``system`` and others. The conversation is the chain of ``parentUuid`` links back from the last
  record (an edited or rewound session keeps its abandoned branches in the file; a compaction's
  ``logicalParentUuid`` is followed back too); ``isSidechain``
  (a subagent's) and ``isMeta`` (Claude Code's own notes) records are left out.
- **Codex CLI** (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``): lines ``{timestamp, type,
  payload}``; ``session_meta`` (id, cwd), ``response_item`` (a Responses API item: ``message``,
  ``function_call``/``function_call_output``, ``custom_tool_call``/``custom_tool_call_output``,
  ``local_shell_call``, ``reasoning``), ``compacted`` (a summary that replaced the history before
  it), ``turn_context`` and ``event_msg`` (the UI's copies: not read). The environment and
  instructions messages Codex adds to every session are left out.

Thinking and reasoning are never read: their text and signatures belong to another provider.
Nothing in a file is used as a path: a session id or cwd is only ever text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

FORMATS = ("atif", "claude-code", "codex")
AGENTS = {"atif": "another agent", "claude-code": "Claude Code", "codex": "Codex CLI"}

#: user messages Codex writes itself into every session (not the person's words)
_CODEX_CONTEXT = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions", "<permissions instructions>")


#: the Responses API items a Codex rollout holds
_CODEX_ITEMS = ("message", "reasoning", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
                "local_shell_call", "web_search_call")


class ImportFormatError(ValueError):
    """The file is none of the formats, or not the one named."""


@dataclass
class Piece:
    """One part of the conversation: ``text`` said by ``role``, a ``call`` the agent made, or a
    ``result`` it read (``name``: the tool, ``call_id``: which call; ``error``: it failed)."""

    kind: Literal["text", "call", "result"]
    role: Literal["user", "assistant"]
    text: str
    name: str = ""
    call_id: str = ""
    error: bool = False


@dataclass
class Read:
    """What a reader found: the pieces in order, the session's own facts and the lines it skipped."""

    pieces: list[Piece] = field(default_factory=list)
    session_id: str | None = None
    cwd: str | None = None
    agent: str | None = None
    #: lines that were not JSON objects (or records of a known type in a shape it could not read)
    malformed: int = 0
    #: images and other blocks with no text, left out
    left_out: int = 0


def sniff(head: str) -> str:
    """The format of a file that starts with ``head``; :class:`ImportFormatError` naming the formats when it is none."""
    first = next((line for line in head.splitlines() if line.strip()), "")
    record = _object(first)
    if record is None:
        if head.lstrip().startswith("{") and '"steps"' in head and '"schema_version"' in head:
            return "atif"
    else:
        if "steps" in record or str(record.get("schema_version", "")).startswith("ATIF"):
            return "atif"
        for line in head.splitlines()[:200]:
            r = _object(line)
            if r is None:
                continue
            if "payload" in r and r.get("type") in ("session_meta", "response_item", "turn_context", "event_msg", "compacted"):
                return "codex"
            if r.get("type") in _CODEX_ITEMS and ("call_id" in r or r.get("role") in ("user", "assistant", "developer")):
                return "codex"  # an older rollout: the items themselves, one a line
            if "sessionId" in r or "parentUuid" in r or (r.get("type") in ("user", "assistant", "summary") and ("message" in r or "summary" in r)):
                return "claude-code"
    # a first line longer than the head (a pasted file, a huge result): its keys, as written
    if re.search(r'^\{[^\n]*"type":\s*"(session_meta|response_item|turn_context|event_msg)"[^\n]*"payload":', head):
        return "codex"
    if re.search(r'^\{[^\n]*"(parentUuid|sessionId)":|^\{[^\n]*"type":\s*"(user|assistant)"[^\n]*"message":\s*\{', head):
        return "claude-code"
    raise ImportFormatError(
        "this file is none of the formats cog thread import reads: atif (an ATIF trajectory, one JSON document with "
        "schema_version and steps), claude-code (~/.claude/projects/…/*.jsonl) or codex (~/.codex/sessions/…/rollout-*.jsonl); "
        "if it is one of them, say which with --format"
    )


def read(fmt: str, lines: Iterable[str]) -> Read:
    """The conversation in ``lines`` (the file's lines, each whole) read as ``fmt``."""
    if fmt == "atif":
        return read_atif("".join(lines))
    if fmt == "claude-code":
        return read_claude(lines)
    if fmt == "codex":
        return read_codex(lines)
    raise ImportFormatError(f"unknown format {fmt!r}: cog thread import reads {', '.join(FORMATS)}")


# --- ATIF ---------------------------------------------------------------------------------


def read_atif(text: str) -> Read:
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ImportFormatError(f"this ATIF trajectory is not valid JSON ({str(exc)[:200]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("steps"), list):
        raise ImportFormatError("this is not an ATIF trajectory: it has no list of steps (an ATIF file is one JSON object with schema_version, session_id, agent and steps)")
    out = Read(session_id=_text_or_none(doc.get("session_id")))
    agent = doc.get("agent")
    if isinstance(agent, dict):
        out.agent = _text_or_none(agent.get("name"))
        extra = agent.get("extra")
        if isinstance(extra, dict):
            out.cwd = _text_or_none(extra.get("cwd"))
    names: dict[str, str] = {}
    for step in doc["steps"]:
        if not isinstance(step, dict):
            out.malformed += 1
            continue
        source = step.get("source")
        message = _content_text(step.get("message"), out)
        results = (step.get("observation") or {}).get("results") if isinstance(step.get("observation"), dict) else None
        if source == "user":
            _say(out, "user", message)
        elif source == "agent":
            _say(out, "assistant", message)
            for call in step.get("tool_calls") or []:
                if not isinstance(call, dict):
                    out.malformed += 1
                    continue
                call_id, name = str(call.get("tool_call_id") or ""), str(call.get("function_name") or "tool")
                names[call_id] = name
                out.pieces.append(Piece("call", "assistant", _arguments(call.get("arguments")), name=name, call_id=call_id))
        elif source == "system" and results:
            summary = "\n\n".join(_content_text(r.get("content"), out) for r in results if isinstance(r, dict))
            _say(out, "user", f"[{message or 'system'}]\n{summary}" if summary else "")
            continue
        else:
            continue
        for result in results if isinstance(results, list) else []:
            if not isinstance(result, dict):
                out.malformed += 1
                continue
            call_id = str(result.get("source_call_id") or "")
            out.pieces.append(Piece("result", "user", _content_text(result.get("content"), out), name=names.get(call_id, "tool"), call_id=call_id))
    return out


# --- Claude Code --------------------------------------------------------------------------


def read_claude(lines: Iterable[str]) -> Read:
    out = Read(agent="Claude Code")
    records: list[dict[str, Any]] = []
    for line in lines:
        record = _object(line)
        if record is None:
            out.malformed += line.strip() != ""
            continue
        records.append(record)
    by_uuid = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    talk = [r for r in records if r.get("type") in ("user", "assistant") and not r.get("isSidechain")]
    chain: list[dict[str, Any]] = []
    if talk and all(isinstance(r.get("uuid"), str) for r in talk):
        seen: set[str] = set()
        node: dict[str, Any] | None = talk[-1]
        while node is not None and node["uuid"] not in seen:  # a cycle in hostile links ends the walk
            seen.add(node["uuid"])
            chain.append(node)
            parent = node.get("parentUuid") or node.get("logicalParentUuid")
            node = by_uuid.get(parent) if isinstance(parent, str) else None
        chain.reverse()
    else:  # records without links: the file's order
        chain = talk
    names: dict[str, str] = {}
    for record in chain:
        if record.get("type") not in ("user", "assistant") or record.get("isSidechain") or record.get("isMeta"):
            continue
        out.session_id = out.session_id or _text_or_none(record.get("sessionId"))
        out.cwd = out.cwd or _text_or_none(record.get("cwd"))
        message = record.get("message")
        if not isinstance(message, dict):
            out.malformed += 1
            continue
        role: Literal["user", "assistant"] = "assistant" if record["type"] == "assistant" else "user"
        content = message.get("content")
        if isinstance(content, str):
            _say(out, role, content)
            continue
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                _say(out, role, str(block.get("text") or ""))
            elif kind == "tool_use" and role == "assistant":
                call_id, name = str(block.get("id") or ""), str(block.get("name") or "tool")
                names[call_id] = name
                out.pieces.append(Piece("call", "assistant", _arguments(block.get("input")), name=name, call_id=call_id))
            elif kind == "tool_result":
                call_id = str(block.get("tool_use_id") or "")
                out.pieces.append(Piece("result", "user", _content_text(block.get("content"), out), name=names.get(call_id, "tool"),
                                        call_id=call_id, error=block.get("is_error") is True))
            elif kind not in ("thinking", "redacted_thinking"):
                out.left_out += 1
                _say(out, role, f"[{str(kind)[:40]} left out on import]")
    return out


# --- Codex CLI ----------------------------------------------------------------------------


def read_codex(lines: Iterable[str]) -> Read:
    out = Read(agent="Codex CLI")
    names: dict[str, str] = {}
    for line in lines:
        record = _object(line)
        if record is not None and "payload" not in record:  # an older rollout: a first line of facts, then the items
            if record.get("type") in _CODEX_ITEMS:
                _codex_item(out, record, names)
            elif "type" not in record and isinstance(record.get("id"), str):
                out.session_id = out.session_id or record["id"]
            else:
                out.malformed += 1
            continue
        if record is None or not isinstance(record.get("payload"), dict):
            out.malformed += line.strip() != ""
            continue
        kind, payload = record.get("type"), record["payload"]
        if kind == "session_meta":
            meta = payload.get("meta") if isinstance(payload.get("meta"), dict) else payload
            out.session_id = out.session_id or _text_or_none(meta.get("id"))
            out.cwd = out.cwd or _text_or_none(meta.get("cwd"))
        elif kind == "turn_context":
            out.cwd = out.cwd or _text_or_none(payload.get("cwd"))
        elif kind == "compacted":  # Codex replaced everything before with this (and kept these items)
            out.pieces.clear()
            summary = str(payload.get("message") or "")
            if summary:
                _say(out, "user", f"[Codex compacted the conversation before this point; its summary:]\n{summary}")
            for item in payload.get("replacement_history") or []:
                if isinstance(item, dict):
                    _codex_item(out, item, names)
        elif kind == "response_item":
            _codex_item(out, payload, names)
    return out


def _codex_item(out: Read, item: dict[str, Any], names: dict[str, str]) -> None:
    kind = item.get("type")
    if kind == "message":
        role = item.get("role")
        if role not in ("user", "assistant"):
            return  # developer and system messages: Codex's own instructions
        text = _content_text(item.get("content"), out)
        if role == "user" and text.lstrip().startswith(_CODEX_CONTEXT):
            return
        _say(out, role, text)
    elif kind in ("function_call", "custom_tool_call"):
        call_id, name = str(item.get("call_id") or item.get("id") or ""), str(item.get("name") or "tool")
        names[call_id] = name
        out.pieces.append(Piece("call", "assistant", _arguments(item.get("arguments", item.get("input"))), name=name, call_id=call_id))
    elif kind == "local_shell_call":
        call_id = str(item.get("call_id") or item.get("id") or "")
        names[call_id] = "local_shell"
        out.pieces.append(Piece("call", "assistant", _arguments(item.get("action")), name="local_shell", call_id=call_id))
    elif kind in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        call_id = str(item.get("call_id") or "")
        output: Any = item.get("output")
        if isinstance(output, str) and output.startswith('{"output"'):  # the shell's {"output": …, "metadata": {"exit_code": …}}
            output = _object(output) or output
        failed = False
        if isinstance(output, dict):  # that, or {"content": …, "success": …} in some versions
            meta: Any = output.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            failed = output.get("success") is False or (isinstance(code, int) and code != 0)
            body: Any = output.get("output", output.get("content", output))
            output = f"{_content_text(body, out)}\n(exit code {code})" if isinstance(code, int) and code != 0 else body
        out.pieces.append(Piece("result", "user", _content_text(output, out), name=names.get(call_id, "tool"), call_id=call_id, error=failed))
    elif kind not in ("reasoning", None):
        out.left_out += 1  # web searches and items this cog does not know


# --- shared -------------------------------------------------------------------------------


def _object(line: str) -> dict[str, Any] | None:
    line = line.strip()
    if not line.startswith("{"):
        return None
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _say(out: Read, role: str, text: str) -> None:
    if text.strip():
        out.pieces.append(Piece("text", "assistant" if role == "assistant" else "user", text))


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _content_text(content: Any, out: Read) -> str:
    """Text of a content value: a string, or a list of parts (``text``, ``input_text``,
    ``output_text``); an image or other part is a note."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False)
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict):
            out.left_out += 1
            texts.append(f"[{str(part.get('type') or 'a part')[:40]} left out on import]")
    return "\n".join(texts)


def _arguments(value: Any) -> str:
    """A call's arguments as text: JSON text as it was, anything else as JSON."""
    if value is None:
        return "{}"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
