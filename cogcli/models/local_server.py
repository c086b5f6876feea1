"""A model server on this machine (Ollama, llama.cpp's server, vLLM, LM Studio on a loopback
address): asked once whether anything listens, before a run stores anything.

A remote API that does not answer may be down for a while, and the client's retries are for that.
Nothing listening on this machine's own address is no passing trouble: it is a server that was
not started. So before the first run of a session, :func:`check_local_server` opens one TCP
connection to the server's address; refused, the run does not start (a :class:`ConfigError`,
``MODEL_CONFIG_ERROR``, exit 2) and the message says how to start the server — no retries, no
thread stored. A wrapped model (recorded, traced) is looked through.
"""

from __future__ import annotations

import errno
import ipaddress
from typing import Any
from urllib.parse import urlsplit

from cogcli.contract.errors import ConfigError, ErrorCode

#: seconds the one connection may take (a loopback address answers at once or never)
CONNECT_TIMEOUT = 3.0
OLLAMA_PORT = 11434


def is_local(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, ``127.0.0.1``, ``::1``)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def local_hint(base_url: str, model_id: str, variable: str) -> str:
    """How to start the server at ``base_url`` on this machine: Ollama's words at Ollama's port."""
    if urlsplit(base_url).port == OLLAMA_PORT:
        return (f"Is Ollama running? Start it with `ollama serve` (or open the Ollama app), fetch the model with "
                f"`ollama pull {model_id}`, then run cog again")
    return (f"Is the model server at {base_url} running? Start it (llama.cpp's llama-server, vLLM, LM Studio, …), "
            f"or point {variable} (or [providers] base_url in your config) at one that is")


def _unwrapped(model: Any) -> Any:
    """The client under a recording or tracing wrapper (each keeps it as ``inner``)."""
    for _ in range(4):
        if getattr(model, "base_url", None) is not None or getattr(model, "inner", None) is None:
            return model
        model = model.inner
    return model


async def check_local_server(model: Any) -> None:
    """Connect once to ``model``'s server when it is on this machine; raise :class:`ConfigError`
    (``MODEL_CONFIG_ERROR``) naming the address and how to start the server when nothing listens.
    A model with no server (replay, scripted) or a remote one is not checked."""
    import anyio

    client = _unwrapped(model)
    base = getattr(client, "base_url", None)
    if not isinstance(base, str) or not is_local(base):
        return
    parts = urlsplit(base)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with anyio.fail_after(CONNECT_TIMEOUT):
            stream = await anyio.connect_tcp(parts.hostname or "localhost", port)
        await stream.aclose()
        return
    except TimeoutError:
        why = f"no answer within {CONNECT_TIMEOUT:g}s"
    except OSError as exc:
        refused = isinstance(exc, ConnectionRefusedError) or exc.errno == errno.ECONNREFUSED or "refused" in str(exc) or "All connection attempts failed" in str(exc)
        why = "connection refused (nothing listens there)" if refused else (exc.strerror or str(exc) or type(exc).__name__)
    endpoint = getattr(client, "url", base)
    hint = getattr(client, "connect_hint", None) or local_hint(base, str(getattr(client, "model", "")), "the base URL")
    raise ConfigError(f"{getattr(client, 'name', 'the model')}: cannot connect to {endpoint}: {why}. {hint}", code=ErrorCode.MODEL_CONFIG_ERROR)
