"""Loopback model servers speaking the providers' real streaming wire formats, for tests.

Each server runs in a background thread on ``127.0.0.1`` (a free port), answers each request
with the next step of its script, and records every request it received::

    from model_servers import OpenAIServer, Reply, ToolCall, Fail   # tests/ is on sys.path under pytest

    with OpenAIServer([Fail(429, retry_after="0"), Reply("Hi", [ToolCall("c1", "read_file", {"path": "a.py"})])]) as srv:
        model = get_model("openai:gpt-4o", base_url=srv.base_url, api_key="sk-test")
        ...
        assert srv.requests[-1].body["stream"] is True

``collect(model, messages, tools)`` drains one turn; ``merged(events)`` joins delta runs for comparisons.

Script steps:

- :class:`Reply` — one assistant turn, streamed as SSE (text and argument text cut into
  ``chunk``-character fragments; ``interleave=True`` mixes the fragments of several OpenAI calls);
  ``thinking`` (:class:`Thinking` / :class:`RedactedThinking` blocks, streamed first by the
  Anthropic server when the request asks for ``thinking``: ``thinking_delta`` pieces, then one
  ``signature_delta``) and ``reasoning`` (streamed first by the OpenAI server as
  ``delta.reasoning_content``, or the key ``reasoning_key`` names); ``hold`` pauses an Anthropic
  stream in the middle of its first thinking block until the test sets it;
- :class:`Fail` — an HTTP error status with the provider's error body (``retry_after`` sets the header);
- :class:`Cut` — a reply cut off (connection dropped) after ``after`` SSE events;
- :class:`Drop` — the connection closed before any answer;
- :class:`Raw` — exact SSE text (``Raw.sse([(event, data), ...])`` builds it);
- :class:`Linger` — a whole reply on a response left open until the client closes it (``srv.closed``);
- a callable ``(RecordedRequest) -> step`` — decide from the request.

A request beyond the script gets HTTP 500 ``script exhausted``.

``token_limit=N`` makes a server count each request's tokens (:func:`count_tokens`, its own crude
tokenizer) and refuse one over ``N`` with the provider's real context-length error (OpenAI:
HTTP 400 ``code: context_length_exceeded``; Anthropic: HTTP 400 ``prompt is too long: … tokens >
N maximum``) without taking a script step; an accepted request's reply reports the counted input
tokens as its usage. ``srv.counted`` / ``srv.rejected`` list the counts. ``GET /v1/models`` on the
OpenAI server lists ``served_model`` (with ``max_model_len=context_length`` when set) and is not
recorded in ``requests``. The Anthropic server enforces the thinking rule the API does: with ``thinking`` in a request,
an assistant message holding ``tool_use`` that does not start with a thinking block it signed
(text and signature as streamed, or a ``redacted_thinking`` block's data) is answered HTTP 400
``invalid_request_error`` without taking a script step (only in the turn going on: after the
last user message that is not only tool results, as the API checks). For "connection refused" use
:func:`unused_port`. ``OpenAIServer.base_url`` ends in ``/v1``; ``AnthropicServer.base_url`` is the
bare origin, as the providers' own environment variables expect.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from cogcli.models.scripted import Call as ToolCall  # one scripted-call type for the in-process and HTTP models

# --- script steps ------------------------------------------------------------------------


@dataclass(frozen=True)
class Thinking:
    """An Anthropic thinking block: its text and the signature the server signs it with."""

    text: str
    signature: str = "EqQBCkYIARgCKkDtestsignature=="


@dataclass(frozen=True)
class RedactedThinking:
    """An Anthropic redacted_thinking block: opaque encrypted data."""

    data: str = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


@dataclass
class Reply:
    text: str = ""
    tool_calls: Sequence[ToolCall] = ()
    usage: tuple[int, int] = (12, 7)  # (input tokens, output tokens)
    stop_reason: str | None = None  # default: the provider's own for "tool calls" / "done"
    chunk: int = 5  # characters per text / argument fragment
    interleave: bool = False  # OpenAI: round-robin the argument fragments of several calls
    #: more fields of the provider's usage object (its prompt cache counts): Anthropic
    #: ``cache_read_input_tokens``…; OpenAI ``prompt_tokens_details``…
    usage_extra: dict[str, Any] | None = None
    #: the other place a stream may carry usage: Anthropic repeats the input counts in
    #: ``message_delta`` (newer API versions); OpenAI-compatible servers put it on the finishing chunk
    usage_late: bool = False
    #: Anthropic: thinking blocks streamed before the text (only when the request asks for thinking)
    thinking: Sequence[Thinking | RedactedThinking] = ()
    #: OpenAI-compatible: reasoning text streamed before the content, in ``reasoning_key`` deltas
    reasoning: str = ""
    reasoning_key: str = "reasoning_content"
    #: Anthropic: the stream waits for this to be set (at most 60 s) after the first thinking
    #: block's pieces, before its signature — a client is seen while the model is still thinking
    hold: threading.Event | None = None


@dataclass
class Fail:
    status: int
    message: str = "simulated failure"
    retry_after: str | None = None
    #: the exact error body (default: the provider's error body around ``message``)
    body: dict[str, Any] | None = None


@dataclass
class Cut:
    reply: Reply
    after: int  # SSE events sent before the connection is dropped


@dataclass
class Drop:
    pass


@dataclass
class Raw:
    text: str
    status: int = 200

    @classmethod
    def sse(cls, events: Sequence[tuple[str | None, Any]]) -> Raw:
        """``[(event name or None, data dict or text), ...]`` as SSE text."""
        return cls("".join(_sse_block(name, data) for name, data in events))


@dataclass
class Linger:
    """A reply streamed whole (the provider's end marker included) on a response the server then
    keeps open, as a proxy may: the client has what it needs and must close the response itself.
    The server waits for that close (at most ``wait`` seconds) and counts it in ``srv.closed``."""

    reply: Reply
    wait: float = 10.0


Step = Reply | Fail | Cut | Drop | Raw | Linger
Script = Sequence[Step | Callable[["RecordedRequest"], Step]]


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-case names
    body: Any  # parsed JSON (or the raw text if it was not JSON)


def unused_port() -> int:
    """A loopback port nothing listens on (connections to it are refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def replies_from_cassette(path: str | Path) -> list[Reply]:
    """Every turn of a cassette as a :class:`Reply` (to serve a recorded run over HTTP)."""
    out: list[Reply] = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        data = json.loads(line) if line.strip() else {}
        if data.get("type") == "turn":
            usage = data.get("usage") or {}
            calls = [ToolCall(c["id"], c["name"], c.get("arguments", {})) for c in data.get("toolCalls", [])]
            out.append(Reply(data.get("text", ""), calls, (usage.get("inputTokens", 0), usage.get("outputTokens", 0))))
    return out


def count_tokens(body: Any) -> int:
    """A request's tokens as these servers count them: the JSON of its system prompt, messages and
    tools, 4 characters a token (cruder than any real tokenizer, and not what cog estimates)."""
    if not isinstance(body, dict):
        return len(str(body)) // 4
    parts = [body.get("system"), body.get("messages"), body.get("tools")]
    return len(json.dumps(parts, ensure_ascii=False)) // 4


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), max(1, size))]


def _sse_block(name: str | None, data: Any) -> str:
    payload = data if isinstance(data, str) else json.dumps(data)
    head = f"event: {name}\n" if name else ""
    return head + "".join(f"data: {line}\n" for line in payload.split("\n")) + "\n"


# --- the servers -------------------------------------------------------------------------


class _ModelServer:
    path = "/"

    def __init__(self, script: Script = (), *, token_limit: int | None = None) -> None:
        self.script = list(script)
        self.token_limit = token_limit
        #: the token count of every model request (accepted or not), in arrival order
        self.counted: list[int] = []
        #: the counts of the requests refused as over ``token_limit``
        self.rejected: list[int] = []
        self.model_lists = 0
        self.requests: list[RecordedRequest] = []
        #: how many :class:`Linger` responses the client closed (set as each close is seen)
        self.closed = 0
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # what a subclass provides
    def render(self, reply: Reply, request: RecordedRequest) -> list[str]:
        raise NotImplementedError

    def refusal(self, body: Any) -> Fail | None:
        """An answer the provider gives a malformed request before any script step (None: none)."""
        return None

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        raise NotImplementedError

    def too_long(self, tokens: int, limit: int) -> Fail:
        """The provider's own answer to a request over its context window."""
        raise NotImplementedError

    def models_list(self) -> dict[str, Any] | None:
        return None

    @property
    def origin(self) -> str:
        assert self._httpd is not None, "server not started"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def base_url(self) -> str:
        return self.origin

    def add(self, *steps: Step | Callable[[RecordedRequest], Step]) -> None:
        with self._lock:
            self.script.extend(steps)

    def start(self) -> _ModelServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                server._handle(self)

            do_GET = do_POST  # noqa: N815

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                # a client that hangs up on a kept-alive connection is routine here, not an error
                import sys

                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self._httpd = Server(("127.0.0.1", 0), Handler)
        httpd = self._httpd
        self._thread = threading.Thread(target=lambda: httpd.serve_forever(poll_interval=0.02), name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> _ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # one request
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length).decode("utf-8", "replace") if length else ""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        request = RecordedRequest(h.command, h.path, {k.lower(): v for k, v in h.headers.items()}, body)
        if h.command == "GET" and h.path.rstrip("/").endswith("/models"):  # never a script step
            with self._lock:
                self.model_lists += 1
            listed = self.models_list()
            payload = json.dumps(listed if listed is not None else self.error_body(404, "no model list here")).encode()
            h.send_response(200 if listed is not None else 404)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        tokens = count_tokens(body) if self.token_limit is not None else None
        with self._lock:
            self.requests.append(request)
            if tokens is not None:
                self.counted.append(tokens)
            if tokens is not None and tokens > self.token_limit:  # type: ignore[operator]
                self.rejected.append(tokens)
                step: Any = self.too_long(tokens, self.token_limit)  # type: ignore[arg-type]
            elif (refused := self.refusal(body)) is not None:  # the provider's 400: no script step taken
                step = refused
            else:
                step = self.script.pop(0) if self.script else Fail(500, "script exhausted")
        if callable(step):
            step = step(request)
        if tokens is not None and isinstance(step, Reply):
            step = replace(step, usage=(tokens, step.usage[1]))
        if h.path != self.path and not isinstance(step, Drop):
            step = Fail(404, f"no route {h.path} (this server answers {self.path})")

        if isinstance(step, Drop):
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
        elif isinstance(step, Fail):
            payload = json.dumps(step.body if step.body is not None else self.error_body(step.status, step.message)).encode()
            h.send_response(step.status)
            h.send_header("Content-Type", "application/json")
            h.send_header("Content-Length", str(len(payload)))
            if step.retry_after is not None:
                h.send_header("Retry-After", step.retry_after)
            h.end_headers()
            h.wfile.write(payload)
        elif isinstance(step, Raw):
            self._stream(h, [step.text], status=step.status)
        elif isinstance(step, Cut):
            self._stream(h, self.render(step.reply, request)[: step.after], cut=True)
        elif isinstance(step, Linger):
            self._stream(h, self.render(step.reply, request), linger=True)
            h.close_connection = True
            h.connection.settimeout(step.wait)
            try:
                while h.connection.recv(4096):  # until the client closes (b"")
                    pass
            except OSError:  # the wait ran out, or the client reset the connection
                pass
            else:
                with self._lock:
                    self.closed += 1
        else:
            self._stream(h, self.render(step, request))

    @staticmethod
    def _stream(h: BaseHTTPRequestHandler, blocks: list[Any], *, status: int = 200, cut: bool = False, linger: bool = False) -> None:
        h.send_response(status)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        for block in blocks:
            if isinstance(block, threading.Event):  # a Reply's hold: what came so far is on its way
                block.wait(60)
                continue
            data = block.encode()
            h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            h.wfile.flush()
        if cut:
            h.close_connection = True
            h.connection.shutdown(socket.SHUT_RDWR)
            return
        if linger:
            return
        h.wfile.write(b"0\r\n\r\n")
        h.wfile.flush()


class OpenAIServer(_ModelServer):
    """``POST /v1/chat/completions`` with ``stream: true``, answered as Chat Completions chunks."""

    path = "/v1/chat/completions"

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def __init__(self, script: Script = (), *, token_limit: int | None = None, served_model: str | None = None, context_length: int | None = None) -> None:
        super().__init__(script, token_limit=token_limit)
        self.served_model = served_model
        self.context_length = context_length

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 401: "invalid_request_error"}.get(status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def too_long(self, tokens: int, limit: int) -> Fail:
        body = {"error": {
            "message": f"This model's maximum context length is {limit} tokens. However, your messages resulted in "
                       f"{tokens} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
        }}
        return Fail(400, body=body)

    def models_list(self) -> dict[str, Any] | None:
        if self.served_model is None:
            return None
        entry: dict[str, Any] = {"id": self.served_model, "object": "model", "created": 1_760_000_000, "owned_by": "test"}
        if self.context_length is not None:
            entry["max_model_len"] = self.context_length
        return {"object": "list", "data": [entry]}

    def render(self, reply: Reply, request: RecordedRequest) -> list[str]:
        body = request.body if isinstance(request.body, dict) else {}
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        n = len(self.requests)

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            data: dict[str, Any] = {
                "id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1_760_000_000,
                "model": body.get("model", "test"),
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
            }
            if with_usage:
                data["usage"] = None
            return _sse_block(None, data)

        blocks = [chunk({"role": "assistant", "content": "", "refusal": None})]
        blocks += [chunk({reply.reasoning_key: piece}) for piece in _pieces(reply.reasoning, reply.chunk)]
        blocks += [chunk({"content": piece}) for piece in _pieces(reply.text, reply.chunk)]
        heads = [
            {"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": ""}}
            for i, c in enumerate(reply.tool_calls)
        ]
        frags = [[{"index": i, "function": {"arguments": p}} for p in _pieces(c.text, reply.chunk)] for i, c in enumerate(reply.tool_calls)]
        if reply.interleave:
            blocks += [chunk({"tool_calls": [h]}) for h in heads]
            for r in range(max((len(f) for f in frags), default=0)):
                blocks += [chunk({"tool_calls": [f[r]]}) for f in frags if r < len(f)]
        else:
            for h, f in zip(heads, frags):
                blocks += [chunk({"tool_calls": [h]})] + [chunk({"tool_calls": [x]}) for x in f]
        i, o = reply.usage
        usage = {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o, **(reply.usage_extra or {})}
        finish = reply.stop_reason or ("tool_calls" if reply.tool_calls else "stop")
        if reply.usage_late:  # usage on the finishing chunk, as some compatible servers send it
            last = json.loads(chunk({}, finish).removeprefix("data: "))
            blocks.append(_sse_block(None, {**last, "usage": usage}))
        else:
            blocks.append(chunk({}, finish))
        if with_usage and not reply.usage_late:
            blocks.append(_sse_block(None, {
                "id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": 1_760_000_000,
                "model": body.get("model", "test"), "choices": [],
                "usage": usage,
            }))
        blocks.append(_sse_block(None, "[DONE]"))
        return blocks


class AnthropicServer(_ModelServer):
    """``POST /v1/messages`` with ``stream: true``, answered as Messages API stream events."""

    path = "/v1/messages"

    def __init__(self, script: Script = (), *, token_limit: int | None = None) -> None:
        super().__init__(script, token_limit=token_limit)
        #: every thinking block this server streamed, as the JSON block a client must send back
        self.signed: set[str] = set()

    def refusal(self, body: Any) -> Fail | None:
        """The API's 400 for a thinking request whose assistant tool_use turn does not start with a
        thinking block as this server sent it (None: the request is fine)."""
        if not isinstance(body, dict) or not body.get("thinking"):
            return None
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        # only the turn going on counts: the messages after the last user message with words in it
        # (not only tool results); the thinking of earlier turns may be left out
        asked = [i for i, m in enumerate(messages) if m.get("role") == "user" and (isinstance(m.get("content"), str) or any(
            isinstance(b, dict) and b.get("type") != "tool_result" for b in m.get("content") or []))]
        for message in messages[asked[-1] + 1 if asked else 0:]:
            content = message.get("content")
            if message.get("role") != "assistant" or not isinstance(content, list):
                continue
            if not any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content):
                continue
            first = content[0] if content else {}
            kept = {k: v for k, v in first.items() if k != "cache_control"} if isinstance(first, dict) else {}
            if kept.get("type") not in ("thinking", "redacted_thinking") or json.dumps(kept, sort_keys=True) not in self.signed:
                message_text = ("messages: Expected `thinking` or `redacted_thinking`, but found `" + str(kept.get("type"))
                                + "`. When `thinking` is enabled, a final `assistant` message must start with a thinking block")
                return Fail(400, body={"type": "error", "error": {"type": "invalid_request_error", "message": message_text}})
        return None

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        kind = {429: "rate_limit_error", 529: "overloaded_error", 401: "authentication_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def too_long(self, tokens: int, limit: int) -> Fail:
        body = {"type": "error", "error": {"type": "invalid_request_error", "message": f"prompt is too long: {tokens} tokens > {limit} maximum"}}
        return Fail(400, body=body)

    def render(self, reply: Reply, request: RecordedRequest) -> list[Any]:
        body = request.body if isinstance(request.body, dict) else {}
        i_tokens, o_tokens = reply.usage
        ev = _sse_block
        blocks: list[Any] = [ev("message_start", {"type": "message_start", "message": {
            "id": f"msg_{len(self.requests)}", "type": "message", "role": "assistant", "content": [],
            "model": body.get("model", "test"), "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": i_tokens, "output_tokens": 1, **(reply.usage_extra or {})},
        }})]
        index = 0
        for thought in reply.thinking if body.get("thinking") else ():
            if isinstance(thought, RedactedThinking):
                blocks.append(ev("content_block_start", {"type": "content_block_start", "index": index,
                                                         "content_block": {"type": "redacted_thinking", "data": thought.data}}))
            else:
                blocks.append(ev("content_block_start", {"type": "content_block_start", "index": index,
                                                         "content_block": {"type": "thinking", "thinking": "", "signature": ""}}))
                blocks += [
                    ev("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "thinking_delta", "thinking": p}})
                    for p in _pieces(thought.text, reply.chunk)
                ]
                if reply.hold is not None and index == 0:
                    blocks.append(reply.hold)
                blocks.append(ev("content_block_delta", {"type": "content_block_delta", "index": index,
                                                         "delta": {"type": "signature_delta", "signature": thought.signature}}))
            blocks.append(ev("content_block_stop", {"type": "content_block_stop", "index": index}))
            self.signed.add(json.dumps(_thought_block(thought), sort_keys=True))
            index += 1
        if reply.text:
            blocks.append(ev("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            blocks.append(ev("ping", {"type": "ping"}))
            blocks += [
                ev("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}})
                for p in _pieces(reply.text, reply.chunk)
            ]
            blocks.append(ev("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        for call in reply.tool_calls:
            blocks.append(ev("content_block_start", {"type": "content_block_start", "index": index,
                                                     "content_block": {"type": "tool_use", "id": call.id, "name": call.name, "input": {}}}))
            blocks += [
                ev("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": p}})
                for p in [""] + _pieces(call.text, reply.chunk)
            ]
            blocks.append(ev("content_block_stop", {"type": "content_block_stop", "index": index}))
            index += 1
        stop = reply.stop_reason or ("tool_use" if reply.tool_calls else "end_turn")
        late = {"input_tokens": i_tokens, **(reply.usage_extra or {})} if reply.usage_late else {}
        blocks.append(ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {**late, "output_tokens": o_tokens}}))
        blocks.append(ev("message_stop", {"type": "message_stop"}))
        return blocks


def _thought_block(thought: Thinking | RedactedThinking) -> dict[str, Any]:
    if isinstance(thought, RedactedThinking):
        return {"type": "redacted_thinking", "data": thought.data}
    return {"type": "thinking", "thinking": thought.text, "signature": thought.signature}


# --- draining a model --------------------------------------------------------------------


async def collect(model: Any, messages: Sequence[Any], tools: Sequence[Any] = ()) -> list[Any]:
    """Every event of one ``model.stream(messages, tools)`` turn, in order."""
    return [event async for event in model.stream(messages, tools)]


def merged(events: Sequence[Any]) -> list[Any]:
    """``events`` with runs of text deltas (and of one call's argument deltas) joined into one:
    the same turn whatever the fragment boundaries were."""
    out: list[Any] = []
    for e in events:
        prev = out[-1] if out else None
        if prev is not None and e.type == prev.type == "text-delta":
            out[-1] = prev.model_copy(update={"text": prev.text + e.text})
        elif prev is not None and e.type == prev.type == "tool-call-delta" and e.id == prev.id:
            out[-1] = prev.model_copy(update={"text": prev.text + e.text})
        else:
            out.append(e)
    return out
