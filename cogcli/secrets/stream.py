"""Credentials in what the model writes — its text and its calls' arguments — redacted on the
wire as results are (:mod:`cogcli.secrets.redactor`), before any event reaches a client, a renderer, the
SSE stream, ACP or a JSON-lines file.

Whole values (``tool-call-end`` and ``tool-update`` arguments, the presentation made from them)
are redacted as they are. Streamed text (``text-delta``, ``reasoning-delta``, ``tool-call-delta``) is redacted piece by
piece, a piece ending where no token can go on — at whitespace, a quote, a comma, a bracket — so a
token split across two deltas is held back until it is whole; what is held is sent (redacted)
before the stream's end event. A private key block is held whole until the stream ends. A run
of more than :data:`MAX_HELD` characters with no such place is sent redacted as it stands.

Only the events a client sees are redacted: the call runs with its real arguments.
"""

from __future__ import annotations

import re
from typing import Any

from cogcli.secrets.redactor import env_forms, redact, redact_value

#: characters held back at most while waiting for the end of a possible token
MAX_HELD = 16_384
#: where no token goes on: a piece may end just after one of these
_BOUNDARY = re.compile(r"[\s\"'`,;()\[\]{}<>]")
_KEY_START = "-----BEGIN"


class StreamRedactor:
    """One stream of text deltas (a text block, a call's argument text) made safe piece by piece."""

    def __init__(self, forms: tuple[str, ...]) -> None:
        self.forms = forms
        self.held = ""

    def feed(self, delta: str) -> str:
        """What of the stream so far can be shown now, redacted."""
        self.held += delta
        if _KEY_START in self.held:  # a key block spans lines: held until the stream ends
            return ""
        cut = _last_boundary(self.held)
        if cut <= 0:
            if len(self.held) <= MAX_HELD:
                return ""
            cut = len(self.held)
        out, self.held = self.held[:cut], self.held[cut:]
        return redact(out, forms=self.forms)[0]

    def flush(self) -> str:
        out, self.held = self.held, ""
        return redact(out, forms=self.forms)[0] if out else ""


def _last_boundary(text: str) -> int:
    """Just past the last boundary character in ``text`` (0: none)."""
    for i in range(len(text) - 1, -1, -1):
        if _BOUNDARY.match(text, i):
            return i + 1
    return 0


class EventRedactor:
    """The events of one run, redacted (:meth:`events`: one event in, the events to emit out)."""

    def __init__(self, text_delta: Any, call_delta: Any) -> None:
        """``text_delta`` and ``call_delta``: the event types a held-back piece is sent as at its
        stream's end (``TextDeltaEvent``, ``ToolCallDeltaEvent``: :mod:`cogcli.wire.events` hands them in)."""
        self.forms = env_forms()
        self.streams: dict[tuple[str, str], StreamRedactor] = {}
        self.kinds = {"delta": text_delta, "args_text_delta": call_delta}
        #: a stream's delta event type, when it is not its field's default (a reasoning stream's)
        self.stream_kinds: dict[tuple[str, str], Any] = {}

    def events(self, event: Any) -> list[Any]:
        kind = event.type
        if kind == "text-delta":
            return self._delta(event, ("text", event.id), "delta")
        if kind == "tool-call-delta":
            return self._delta(event, ("call", event.id), "args_text_delta")
        if kind == "reasoning-delta":
            self.stream_kinds[("reasoning", event.id)] = type(event)
            return self._delta(event, ("reasoning", event.id), "delta")
        if kind == "text-end":
            return [*self._flushed(("text", event.id), event, "delta"), event]
        if kind == "reasoning-end":
            return [*self._flushed(("reasoning", event.id), event, "delta"), event]
        if kind == "tool-call-end":
            flushed = self._flushed(("call", event.id), event, "args_text_delta")
            self._whole(event, "arguments", "presentation")
            return [*flushed, event]
        if kind == "tool-update":
            self._whole(event, "arguments")
        return [event]

    def _delta(self, event: Any, key: tuple[str, str], field: str) -> list[Any]:
        stream = self.streams.get(key)
        if stream is None:
            stream = self.streams[key] = StreamRedactor(self.forms)
        shown = stream.feed(getattr(event, field))
        if not shown:
            return []
        setattr(event, field, shown)
        return [event]

    def _flushed(self, key: tuple[str, str], end: Any, field: str) -> list[Any]:
        stream = self.streams.pop(key, None)
        rest = stream.flush() if stream is not None else ""
        kind = self.stream_kinds.pop(key, None) or self.kinds[field]
        if not rest:
            return []
        return [kind(id=end.id, **{field: rest})]

    def _whole(self, event: Any, *fields: str) -> None:
        for field in fields:
            value = getattr(event, field, None)
            if value is not None:
                redacted, count = redact_value(value, forms=self.forms)
                if count:
                    setattr(event, field, redacted)
