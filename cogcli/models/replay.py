"""Cassettes and the replay model: a recorded run's model turns, played back deterministically.

A cassette is JSON lines, camelCase on disk::

    {"type": "cassette", "schemaVersion": 1, "model": "openai:gpt-4o", "createdAt": "2026-12-02T10:00:00Z", "contextWindow": 128000}
    {"type": "turn", "text": "I'll look first.", "toolCalls": [{"id": "call_1", "name": "read_file", "arguments": {"path": "a.py"}}], "usage": {"inputTokens": 10, "outputTokens": 5}}

A turn may hold ``reasoning``: its reasoning blocks as the provider sent them (``format``, ``kind``,
``text``, ``signature``, ``data``: :class:`~cogcli.models.base.Reasoning`), played before its text.
A turn's usage may also hold ``cachedInputTokens``, ``cacheWriteTokens``, ``reasoningTokens`` and ``costUsd`` (as the
provider reported them when it was recorded; older cassettes without them replay as before).

Each ``stream()`` call plays the next turn: its reasoning (each block's text in a few
``ReasoningDelta``s, then the whole block), its text in a few ``TextDelta``s, each call's
arguments JSON in a few ``ToolCallArgsDelta`` fragments, then usage and ``TurnFinished``.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from cogcli.contract.errors import ConfigError, ErrorCode, ModelError
from cogcli.models.sse import loads
from cogcli.models.base import (
    Message,
    ModelStreamEvent,
    Reasoning,
    ReasoningDelta,
    ReasoningFinished,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallFinished,
    ToolCallStarted,
    ToolSpec,
    TurnFinished,
    UsageReport,
)

CASSETTE_SCHEMA_VERSION = 1
#: the largest cassette read (a recorded run is kilobytes; a workspace's cog.toml may name one)
MAX_CASSETTE_BYTES = 64 * 1024 * 1024


class _CassetteModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")

    def to_line(self) -> str:
        return json.dumps(self.model_dump(mode="json", by_alias=True, exclude_none=True), ensure_ascii=False)


class CassetteHeader(_CassetteModel):
    type: Literal["cassette"] = "cassette"
    schema_version: int = CASSETTE_SCHEMA_VERSION
    model: str
    created_at: str = Field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"))
    #: the context window the recorded run had (from the flag, the table or the server): a replay
    #: compacts at the same points only with the same window
    context_window: int | None = Field(default=None, ge=1)


class CassetteToolCall(_CassetteModel):
    id: str
    name: str
    #: the parsed arguments object, or the raw text when the model sent something that is not JSON
    arguments: Any = Field(default_factory=dict)
    #: the exact text as streamed, kept only when it differs from ``arguments`` written as JSON
    #: (other spacing or escapes), so a replay is byte-for-byte the recorded run
    raw_arguments: str | None = None

    @classmethod
    def from_stream(cls, id: str, name: str, text: str) -> CassetteToolCall:
        """A call from the argument text a model streamed (parsed when it is JSON)."""
        try:
            arguments: Any = loads(text) if text.strip() else {}
        except ValueError:
            return cls(id=id, name=name, arguments=text)
        call = cls(id=id, name=name, arguments=arguments)
        return call if call.arguments_text() == text else cls(id=id, name=name, arguments=arguments, raw_arguments=text)

    def arguments_text(self) -> str:
        if self.raw_arguments is not None:
            return self.raw_arguments
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(self.arguments, ensure_ascii=False)


class CassetteUsage(_CassetteModel):
    input_tokens: int = 0
    output_tokens: int = 0
    #: the prompt cache's part of ``input_tokens``, and the cost, as recorded (absent in cassettes
    #: from before cog counted them, and where the provider did not say)
    cached_input_tokens: int | None = Field(default=None, ge=0)
    cache_write_tokens: int | None = Field(default=None, ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)
    cost_usd: float | None = Field(default=None, ge=0, allow_inf_nan=False)

    @classmethod
    def of(cls, report: UsageReport) -> CassetteUsage:
        return cls(
            input_tokens=report.input_tokens, output_tokens=report.output_tokens,
            cached_input_tokens=report.cached_input_tokens or None, cache_write_tokens=report.cache_write_tokens,
            reasoning_tokens=report.reasoning_tokens, cost_usd=report.cost_usd,
        )

    def report(self) -> UsageReport:
        return UsageReport(
            input_tokens=self.input_tokens, output_tokens=self.output_tokens, cached_input_tokens=self.cached_input_tokens or 0,
            cache_write_tokens=self.cache_write_tokens, reasoning_tokens=self.reasoning_tokens, cost_usd=self.cost_usd,
        )


class CassetteTurn(_CassetteModel):
    type: Literal["turn"] = "turn"
    #: the turn's reasoning blocks as recorded (absent: none, and in cassettes from before cog kept them)
    reasoning: list[Reasoning] | None = None
    text: str = ""
    tool_calls: list[CassetteToolCall] = Field(default_factory=list)
    usage: CassetteUsage | None = None
    stop_reason: str | None = None


def _read_bounded(p: Path) -> bytes:
    """The file's bytes: opened without waiting (a FIFO never hangs cog), a regular file only, at
    most :data:`MAX_CASSETTE_BYTES`."""
    import os
    import stat

    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"cassette {p} is not a regular file (a FIFO, a device or a folder): give a .jsonl file")
        if info.st_size > MAX_CASSETTE_BYTES:
            raise ConfigError(f"cassette {p} is larger than {MAX_CASSETTE_BYTES // (1024 * 1024)} MiB ({info.st_size:,} bytes): not a recorded run")
        data = fh.read(MAX_CASSETTE_BYTES + 1)
    if len(data) > MAX_CASSETTE_BYTES:  # it grew while read
        raise ConfigError(f"cassette {p} is larger than {MAX_CASSETTE_BYTES // (1024 * 1024)} MiB: not a recorded run")
    return data


def read_cassette(path: str | Path) -> tuple[CassetteHeader, list[tuple[int, CassetteTurn]]]:
    """The header and ``(line number, turn)`` pairs of a cassette. Raises :class:`ConfigError`
    naming the file and line when it is missing or malformed."""
    p = Path(path)
    try:
        lines = _read_bounded(p).decode("utf-8").splitlines()
    except FileNotFoundError:
        raise ConfigError(f"cassette not found: {p} (record one with `cog edit --record {p}`)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read cassette {p}: {exc}") from None
    header: CassetteHeader | None = None
    turns: list[tuple[int, CassetteTurn]] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = loads(line)
            if header is None:
                if not isinstance(data, dict) or data.get("type") != "cassette":
                    raise ConfigError(f"{p}:{number}: a cassette starts with a header line {{\"type\": \"cassette\", ...}}")
                header = CassetteHeader.model_validate(data)
                if header.schema_version > CASSETTE_SCHEMA_VERSION:
                    raise ConfigError(
                        f"{p}:{number}: cassette schemaVersion {header.schema_version} is newer than this cog reads "
                        f"({CASSETTE_SCHEMA_VERSION}); upgrade cog"
                    )
            elif isinstance(data, dict) and data.get("type") == "turn":
                turns.append((number, CassetteTurn.model_validate(data)))
            # other line types: written by a newer cog, skipped
        except ValueError as exc:  # json and pydantic errors
            reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise ConfigError(f"{p}:{number}: not a valid cassette line: {reason}") from None
    if header is None:
        raise ConfigError(f"{p}: empty cassette (no header line)")
    return header, turns


def fragments(text: str, pieces: int = 3) -> list[str]:
    """``text`` cut into at most ``pieces`` non-empty parts of near-equal length (deterministic)."""
    if not text:
        return []
    size = -(-len(text) // pieces)
    return [text[i : i + size] for i in range(0, len(text), size)]


def play_turn(
    text: str,
    calls: Sequence[tuple[str, str, str]],
    *,
    usage: tuple[int, int] | UsageReport | None = None,
    stop_reason: str | None = None,
    split: Callable[[str, int], list[str]] = fragments,
    text_size: int = 3,
    args_size: int = 3,
    reasoning: Sequence[Reasoning] = (),
) -> Iterator[ModelStreamEvent]:
    """The stream events of one recorded turn: its text in a few deltas, each call ``(id, name,
    argument text)`` started, its arguments in fragments, finished; then usage (``(input, output)``
    tokens, or a whole report) and the turn's end.
    ``split(text, n)`` cuts text (default: into ``n`` near-equal pieces). ``reasoning`` blocks come
    first: each one's text in deltas, then the whole block as it was recorded."""
    for block in reasoning:
        for piece in split(block.text, text_size):
            yield ReasoningDelta(text=piece)
        yield ReasoningFinished(block=block.model_copy())
    for piece in split(text, text_size):
        yield TextDelta(text=piece)
    for call_id, name, arguments in calls:
        yield ToolCallStarted(id=call_id, name=name)
        for piece in split(arguments, args_size):
            yield ToolCallArgsDelta(id=call_id, text=piece)
        yield ToolCallFinished(id=call_id, name=name, arguments_text=arguments)
    if isinstance(usage, UsageReport):
        yield usage
    elif usage is not None:
        yield UsageReport(input_tokens=usage[0], output_tokens=usage[1])
    yield TurnFinished(stop_reason=stop_reason or ("tool_calls" if calls else "stop"))


class ReplayModel:
    """A :class:`~cogcli.models.base.Model` that plays a cassette's turns in order."""

    def __init__(self, path: str | Path, *, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or f"replay:{path}"
        self.header, self.turns = read_cassette(self.path)
        self.position = 0
        #: the recorded run's window (None in a cassette that does not say)
        self.context_window = self.header.context_window

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.path)!r}, turn {self.position}/{len(self.turns)})"

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        # the turn is checked whole before its first event, so a wrong turn yields nothing
        if self.position >= len(self.turns):
            raise ModelError(
                f"cassette {self.path} is exhausted: it holds {len(self.turns)} model turn(s) and the run asked "
                f"for turn {self.position + 1} (the run went differently from the recording; re-record it)",
                code=ErrorCode.CASSETTE_EXHAUSTED,
            )
        line, turn = self.turns[self.position]
        offered = {t.name for t in tools}
        for call in turn.tool_calls:
            if call.name not in offered:
                raise ModelError(
                    f"cassette {self.path} line {line} calls tool {call.name!r}, which this run does not offer "
                    f"(offered: {', '.join(sorted(offered)) or 'none'})"
                )
        self.position += 1
        usage = None if turn.usage is None else turn.usage.report()
        calls = [(call.id, call.name, call.arguments_text()) for call in turn.tool_calls]
        for event in play_turn(turn.text, calls, usage=usage, stop_reason=turn.stop_reason, reasoning=turn.reasoning or ()):
            yield event

    async def aclose(self) -> None:
        return None
