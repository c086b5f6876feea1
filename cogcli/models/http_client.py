"""The HTTP client of the model clients (issue 53: fast to the first token): httpx imported without
what a request never uses (:func:`import_httpx`), and the first request's connection opened early
(:func:`connect_early`).

Connecting early: while a session sets a run up (its MCP servers, the thread store, the instruction
files), :func:`connect_early` opens the TCP connection to the provider, and for ``https`` does the
TLS handshake, with the client's own TLS settings (certificates, ``SSL_CERT_FILE``, ALPN
``http/1.1``). The connection is held by the client's network backend (:class:`EarlyConnections`,
put under httpx's connection pool) until the pool's first connection to that host and port, which
takes it instead of connecting. Nothing is sent on it before the request: a connection that fails
or is never used costs nothing but the attempt (the request then connects itself and reports its own
error), and one left over is closed with the client. With a proxy configured (``HTTPS_PROXY`` and
the like) nothing is opened early: the request goes through the proxy.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import urlsplit

log = logging.getLogger("cogcli.models")

T = TypeVar("T")

#: seconds an early connection may wait for its request (servers close idle ones; a run's set-up
#: that waited on a person, an approval of the workspace's commands, is longer)
MAX_EARLY_AGE = 20.0
#: the environment variables that route httpx's requests through a proxy
PROXY_VARIABLES = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY")


def import_httpx() -> Any:
    """httpx, imported without two things a model request never uses (about 0.1 s of CPU of
    ``cog edit``'s start, issue 53): httpx's own command-line client (``httpx._main``, which
    imports click, rich and pygments when they are installed; ``httpx.main`` is then httpx's
    stub saying what to install) and, under asyncio, trio, which httpcore imports at once in case
    it runs under trio. httpcore then gets a stand-in that imports trio on first use, so a later
    run under trio in the same process still works. Once httpx is imported, this returns it."""
    import sys

    if (httpx := sys.modules.get("httpx")) is not None:
        return httpx
    blocked = ["httpx._main"]
    if "trio" not in sys.modules and _under_asyncio():
        blocked.append("trio")
    for name in blocked:
        sys.modules[name] = None  # type: ignore[assignment]  # "import NAME" raises ImportError
    try:
        import httpx
        import httpcore._synchronization as sync
    finally:
        for name in blocked:
            if sys.modules.get(name, False) is None:
                del sys.modules[name]
    if sync.trio is None and "trio" in blocked:
        sync.trio = _LazyModule("trio")
    return httpx


def _under_asyncio() -> bool:
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:  # no asyncio loop runs here (a synchronous caller, trio)
        return False
    return True


class _LazyModule:
    """A module imported on its first attribute read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        import importlib

        return getattr(importlib.import_module(self._name), attribute)


def new_client(timeout: float, base_url: str = "") -> Any:
    """The ``httpx.AsyncClient`` of one model (``timeout`` seconds a read may take; connecting at
    most 15), its network backend able to take a connection opened early.

    A model served over plain ``http`` (a local server: Ollama, llama.cpp, vLLM) never needs the
    system's certificate store, whose loading is about 10 ms of every start (issue 53): its client
    gets a TLS context that trusts no certificate, so anything that would reach an ``https`` address
    through it (a proxy, a redirect) fails verification instead of going unchecked. With a proxy
    configured the store is loaded as usual (the proxy may be ``https``)."""
    httpx = import_httpx()
    options: dict[str, Any] = {}
    if urlsplit(base_url).scheme == "http" and not any(os.environ.get(v) or os.environ.get(v.lower()) for v in PROXY_VARIABLES):
        import ssl

        options["verify"] = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies, against no certificate at all
    client = httpx.AsyncClient(timeout=httpx.Timeout(timeout, connect=min(timeout, 15.0)), **options)
    pool = getattr(getattr(client, "_transport", None), "_pool", None)
    inner = getattr(pool, "_network_backend", None)
    if inner is not None and hasattr(pool, "_ssl_context"):  # httpx's and httpcore's layout as of httpx 0.28
        pool._network_backend = EarlyConnections(inner, pool._ssl_context)
    return client


async def while_connecting(model: Any, work: Callable[[], Awaitable[T]]) -> T:
    """``await work()`` while ``model``'s first connection is opened (:func:`connect_model_early`);
    returns once both are done. ``work``'s exception is raised as itself (not in a group), the
    connecting then given up."""
    import anyio

    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(connect_model_early, model)
        try:
            result = await work()
        except Exception as exc:
            failure = exc
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result


async def connect_model_early(model: Any) -> None:
    """Open the connection of ``model``'s first request while a run is set up: an HTTP client's
    :meth:`~cogcli.models.sse.HttpModel.connect_early`, looked through a recording or tracing
    wrapper; other models (scripted, replayed) have nothing to open. Never raises."""
    from cogcli.models.local_server import _unwrapped

    early = getattr(_unwrapped(model), "connect_early", None)
    if early is not None:
        try:
            await early()
        except Exception:  # the request connects itself and says what is wrong
            log.debug("connecting early failed", exc_info=True)


async def connect_early(client: Any, url: str, timeout: float) -> None:
    """Open the connection to ``url``'s host that ``client``'s first request will take (see the
    module's words); returns once it is open, or failed (never raises)."""
    backend = getattr(getattr(getattr(client, "_transport", None), "_pool", None), "_network_backend", None)
    if not isinstance(backend, EarlyConnections) or any(os.environ.get(v) or os.environ.get(v.lower()) for v in PROXY_VARIABLES):
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    port = parts.port or (443 if parts.scheme == "https" else 80)
    await backend.open(parts.hostname, port, tls=parts.scheme == "https", timeout=timeout)


async def close_early(client: Any) -> None:
    """Close a connection opened early that no request took."""
    backend = getattr(getattr(getattr(client, "_transport", None), "_pool", None), "_network_backend", None)
    if isinstance(backend, EarlyConnections):
        await backend.aclose()


class _Early:
    """One connection being opened early: set ``done`` once ``stream`` is open (or None: failed)."""

    def __init__(self) -> None:
        import anyio

        self.done = anyio.Event()
        self.stream: Any = None
        self.opened = time.monotonic()


class EarlyConnections:
    """httpcore's network backend (its ``AsyncNetworkBackend`` methods; not a subclass, so that this
    module imports no httpcore before :func:`import_httpx`), with connections opened ahead of the
    pool's asking (:meth:`open`); the pool's first ``connect_tcp`` to that host and port takes one."""

    def __init__(self, inner: Any, ssl_context: Any) -> None:
        self._inner = inner
        self._ssl_context = ssl_context
        self._early: dict[tuple[str, int], _Early] = {}
        #: the pool connected once: it keeps its connections alive, so nothing more is opened early
        self._connected = False

    async def open(self, host: str, port: int, *, tls: bool, timeout: float) -> None:
        if self._connected or (host, port) in self._early:
            return
        early = self._early[(host, port)] = _Early()
        try:
            stream = await self._inner.connect_tcp(host, port, timeout=timeout)
            if tls:
                self._ssl_context.set_alpn_protocols(["http/1.1"])  # as httpcore sets it for HTTP/1.1
                stream = _Opened(await stream.start_tls(self._ssl_context, server_hostname=host, timeout=timeout))
            early.stream = stream
        except Exception as exc:  # the request connects itself, and says what is wrong
            log.debug("connecting early to %s:%s failed: %s", host, port, exc)
        finally:
            early.done.set()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Any = None) -> Any:
        self._connected = True
        early = self._early.pop((host, port), None) if local_address is None and not socket_options else None
        if early is not None:
            await early.done.wait()
            if early.stream is not None and time.monotonic() - early.opened < MAX_EARLY_AGE:
                return early.stream
            if early.stream is not None:  # held too long: the server may have closed it
                await early.stream.aclose()
        return await self._inner.connect_tcp(host, port, timeout=timeout, local_address=local_address, socket_options=socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Any:
        return await self._inner.connect_unix_socket(path, timeout=timeout, socket_options=socket_options)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)

    async def aclose(self) -> None:
        left, self._early = list(self._early.values()), {}
        for early in left:
            if early.stream is not None:
                await early.stream.aclose()


class _Opened:
    """A connection whose TLS handshake was done early: httpcore's ``start_tls`` finds it done."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = await self._stream.read(max_bytes, timeout=timeout)
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._stream.write(buffer, timeout=timeout)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
        return self

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)
