"""What both HTTP model clients share: Server-Sent Events parsing, the retry policy and one
streaming POST that turns HTTP failures into :class:`~cogcli.contract.errors.ModelError`.

A turn is retried (connect errors, 429, 5xx, a stream cut before anything arrived) only while
none of its events has been yielded, so the run never sees a half turn twice. httpx is imported
inside the functions that need it: importing this module stays cheap.
"""

from __future__ import annotations

import email.utils
import json
import logging
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from cogcli.contract.errors import ContextLengthError, ErrorCode, ModelError
from cogcli.models.context import context_overflow

if TYPE_CHECKING:
    import httpx

    from cogcli.models.base import Message, ModelStreamEvent, ToolSpec

log = logging.getLogger("cogcli.models")

T = TypeVar("T")


# --- Server-Sent Events ------------------------------------------------------------------


@dataclass(frozen=True)
class SSEEvent:
    """One dispatched event: its ``event:`` name (``"message"`` when none) and its data lines joined by newlines."""

    event: str
    data: str

    def json(self) -> Any:
        """The data as JSON; ``ValueError`` when it is not JSON, or nested deeper than Python can read."""
        return loads(self.data)


def loads(text: str | bytes) -> Any:
    """``json.loads``, with a document nested too deeply to read (a ``RecursionError`` in the
    parser) reported as the ``ValueError`` any other malformed JSON gives: one thing to catch."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to read") from None


async def aiter_sse(lines: AsyncIterable[str]) -> AsyncIterator[SSEEvent]:
    """Parse SSE lines (without their line endings) into events, as the WHATWG spec reads them:
    ``field: value`` lines, comment lines starting with ``:``, a blank line dispatches. An event
    left pending at end of stream is dispatched too (some servers omit the last blank line)."""
    name = ""
    data: list[str] = []
    async for raw in lines:
        line = raw.rstrip("\r\n")
        if not line:
            if data:
                yield SSEEvent(name or "message", "\n".join(data))
            name, data = "", []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
        # id / retry / unknown fields: nothing a model stream needs
    if data:
        yield SSEEvent(name or "message", "\n".join(data))


# --- retries -----------------------------------------------------------------------------


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff. ``retries`` is how many times a turn is tried
    again after the first attempt; a server's ``Retry-After`` (seconds or an HTTP date) wins over
    the computed delay, and one longer than ``max_retry_after`` ends the turn instead."""

    retries: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 60.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if retry_after is not None:
            return max(0.0, retry_after)
        return min(self.max_delay, self.base_delay * (2**attempt))


class RetryableError(Exception):
    """A failure that a retry may cure, raised by one attempt before it yielded anything."""

    def __init__(self, message: str, *, retry_after: float | None = None, connect_failed: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        #: nothing answered at the address (no server there), as opposed to a server that failed
        self.connect_failed = connect_failed


def parse_retry_after(value: str | None) -> float | None:
    """``Retry-After`` as seconds from now: a number of seconds or an HTTP date; None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


async def stream_with_retries(
    attempt: Callable[[], AsyncIterator[T]], policy: RetryPolicy, *, label: str, connect_hint: str | None = None
) -> AsyncIterator[T]:
    """Yield what ``attempt()`` yields. When it raises :class:`RetryableError` before yielding
    anything, wait and call it again, at most ``policy.retries`` times; a failure after the first
    item, or the last failure, becomes :class:`ModelError` (``MODEL_STREAM_ERROR``). With a
    ``connect_hint`` (a local server: Ollama, a server on this machine), a last failure because
    nothing answered at all is a configuration error (``MODEL_CONFIG_ERROR``, exit 2) that ends
    with the hint: how to start the server."""
    import anyio

    tries = 0
    while True:
        started = False
        try:
            async for item in attempt():
                started = True
                yield item
            return
        except RetryableError as exc:
            if started:
                raise ModelError(f"{label}: the stream broke mid-turn: {exc.message}") from None
            if tries >= policy.retries:
                gave_up = f" (gave up after {tries + 1} attempts)" if tries else ""
                if exc.connect_failed and connect_hint:
                    raise ModelError(f"{label}: {exc.message}{gave_up}. {connect_hint}", code=ErrorCode.MODEL_CONFIG_ERROR) from None
                raise ModelError(f"{label}: {exc.message}{gave_up}") from None
            wait = policy.delay(tries, exc.retry_after)
            if wait > policy.max_retry_after:
                raise ModelError(
                    f"{label}: {exc.message}; the server asked to retry after {wait:.0f}s, "
                    f"longer than the {policy.max_retry_after:.0f}s cog waits"
                ) from None
            tries += 1
            log.warning("%s: %s; retry %d of %d in %.2fs", label, exc.message, tries, policy.retries, wait)
            await anyio.sleep(wait)


# --- one streaming POST ------------------------------------------------------------------


def json_body(body: dict[str, Any]) -> bytes:
    """A request body as compact UTF-8 JSON. Text UTF-8 cannot carry (lone surrogates: a file name
    that is not UTF-8 the model quotes back) is sent as ``\\u`` escapes instead of failing the turn."""
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(body, separators=(",", ":"), allow_nan=False).encode("ascii")


def hide_known_secrets(text: str, secrets: Iterable[str | None]) -> str:
    """``text`` with each of the given ``secrets`` (the client's own API keys, of 4 characters or
    more) replaced by ``[redacted]``. Not :func:`cogcli.secrets.redactor.redact`, which finds credentials
    of every kind in what a tool returns."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text


def _error_detail(body: bytes) -> str:
    """The message a provider put in an error body (OpenAI and Anthropic both use ``{"error": {"message"}}``)."""
    text = body.decode("utf-8", "replace").strip()
    try:
        payload = json.loads(text)
    except ValueError:
        return text[:500]
    if isinstance(payload, dict):
        err = payload.get("error")
        if isinstance(err, dict) and err.get("message"):
            kind = err.get("type")
            return f"{kind}: {err['message']}" if kind else str(err["message"])
        if isinstance(err, str):
            return err
        if payload.get("message"):
            return str(payload["message"])
    return text[:500]


async def post_sse(
    client: httpx.AsyncClient,
    url: str,
    *,
    headers: dict[str, str],
    body: dict[str, Any],
    secrets: Iterable[str | None],
    auth_hint: str,
    label: str,
) -> AsyncIterator[SSEEvent]:
    """POST ``body`` as JSON and yield the SSE events of a 2xx answer.

    Connect errors, 408/409/429/5xx answers and transport errors while reading raise
    :class:`RetryableError`; 401/403/404 raise :class:`ModelError` with code
    ``MODEL_CONFIG_ERROR`` (``auth_hint`` says what to check); any other status raises
    :class:`ModelError`; ``label`` (the model's name) starts those messages. No message ever
    contains a secret."""
    from cogcli.models.http_client import import_httpx

    httpx = import_httpx()
    secrets = tuple(secrets)
    try:
        payload = {"Content-Type": "application/json", **headers}
        async with client.stream("POST", url, headers=payload, content=json_body(body)) as response:
            if response.status_code >= 300:
                raw = await response.aread()
                detail = hide_known_secrets(_error_detail(raw), secrets)
                what = f"HTTP {response.status_code} from {url}: {detail}"
                overflow = context_overflow(response.status_code, raw)
                if overflow is not None:  # the run compacts its history and tries once more
                    raise ContextLengthError(f"{label}: {what}", limit=overflow.limit, tokens=overflow.tokens)
                if response.status_code in (408, 409, 429) or response.status_code >= 500:
                    raise RetryableError(what, retry_after=parse_retry_after(response.headers.get("retry-after")))
                what = f"{label}: {what}"
                if response.status_code in (401, 403):
                    raise ModelError(f"{what} ({auth_hint})", code=ErrorCode.MODEL_CONFIG_ERROR)
                if response.status_code == 404:
                    raise ModelError(f"{what} (check the model name and base URL)", code=ErrorCode.MODEL_CONFIG_ERROR)
                raise ModelError(what)
            async for event in aiter_sse(response.aiter_lines()):
                yield event
    except httpx.ConnectError as exc:
        raise RetryableError(
            f"cannot connect to {url}: {hide_known_secrets(str(exc) or type(exc).__name__, secrets)}", connect_failed=True
        ) from None
    except httpx.TransportError as exc:
        raise RetryableError(f"{type(exc).__name__} talking to {url}: {hide_known_secrets(str(exc), secrets)}") from None


class HttpModel:
    """What the HTTP clients share: one lazily made httpx client, the retrying ``stream()`` and
    ``aclose()``. A subclass gives ``url``, ``request_body()``, ``_headers()`` and ``_attempt()``
    (one try at the request, yielding the turn's events)."""

    name: str
    base_url: str
    timeout: float
    retry: RetryPolicy
    #: what to do when nothing answers at ``base_url`` (a local server that is not running); None:
    #: a failure to connect is an ordinary stream error (a remote API may be down for a while)
    connect_hint: str | None = None
    _client: httpx.AsyncClient | None = None

    @property
    def url(self) -> str:
        raise NotImplementedError

    def __repr__(self) -> str:  # never the key
        return f"{type(self).__name__}({self.name!r}, base_url={self.base_url!r})"

    def request_body(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> dict[str, Any]:
        raise NotImplementedError

    def _attempt(self, body: dict[str, Any]) -> AsyncIterator[ModelStreamEvent]:
        raise NotImplementedError

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            from cogcli.models.http_client import new_client

            self._client = new_client(self.timeout, self.base_url)
        return self._client

    async def connect_early(self) -> None:
        """Open the connection (TCP, and TLS for https) the first request will use, while the run
        is still being set up (:func:`cogcli.models.http_client.connect_early`); never raises."""
        from cogcli.models.http_client import connect_early

        await connect_early(self._http(), self.url, min(self.timeout, 15.0))

    async def stream(self, messages: Sequence[Message], tools: Sequence[ToolSpec]) -> AsyncIterator[ModelStreamEvent]:
        async for event in self._stream_body(self.request_body(messages, tools)):
            yield event

    async def _stream_body(self, body: dict[str, Any]) -> AsyncIterator[ModelStreamEvent]:
        """One turn for a request body already made, with the retry policy."""
        async for event in stream_with_retries(lambda: self._attempt(body), self.retry, label=self.name, connect_hint=self.connect_hint):
            yield event

    async def aclose(self) -> None:
        if self._client is not None:
            from cogcli.models.http_client import close_early

            await close_early(self._client)
            await self._client.aclose()
            self._client = None
