"""``cog serve``: the workspace's runs over HTTP with server-sent events, and the Studio page.

The first line on stdout is the URL to open (``http://127.0.0.1:PORT/?token=TOKEN``, a fresh
token each start); logs go to stderr. Ctrl-C aborts the runs in flight, waits until each has
sent its ``finish`` (and its streams their ``[DONE]``), then stops; a second Ctrl-C quits at once.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from cogcli.settings.options import SettingFlags
from cogcli.render.summary import EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE


def _fail(message: str) -> int:
    from cogcli.shown.visible import say

    say(message)
    return EXIT_USAGE


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def url_for(host: str, port: int, token: str) -> str:
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/?token={token}"


def run_serve(root: Path, *, host: str = "127.0.0.1", port: int = 0, flags: SettingFlags | None = None) -> int:
    """Serve ``root``'s runs; ``flags``: the settings of every run (a run's own ``model`` over theirs)."""
    import uvicorn

    from cogcli.server.asgi_app import create_app
    from cogcli.server.auth import is_loopback, new_token

    host = host.strip().strip("[]")
    flags = flags or SettingFlags()
    model = flags.model
    if model:
        from cogcli.contract.errors import ConfigError
        from cogcli.models import parse_model_spec

        try:
            parse_model_spec(model)
        except ConfigError as exc:
            return _fail(exc.message)
    try:
        sock = _listen(host, port)
    except (OSError, OverflowError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        return _fail(f"cannot listen on {host}:{port}: {reason}; pick another --port (0 lets the system choose) or --host")
    if not is_loopback(host):
        from cogcli.server.auth import WILDCARDS

        if host.strip("[]").lower() in WILDCARDS:
            # a request must name a host the server knows (DNS rebinding): a wildcard names none
            sys.stderr.write(
                f"cog: warning: listening on {host}, but only requests addressed to a loopback name are answered; "
                "to serve other machines, pass --host with this machine's own address or name\n"
            )
        else:
            sys.stderr.write(
                f"cog: warning: listening on {host}, not only on this machine: anyone who can reach it and has the "
                "token can run the agent in this workspace. Use --host 127.0.0.1 unless you mean that.\n"
            )
    token = new_token()
    from cogcli.worktrees import best_of

    app = create_app(root, token=token, host=host, flags=flags, attempts=best_of)  # POST /api/runs {"attempts": N}
    registry = app.registry  # type: ignore[attr-defined]
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=60)

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if not self.should_exit:
                sys.stderr.write("cog: stopping: aborting runs in flight (Ctrl-C again to quit at once)\n")
                loop: Any = getattr(self, "_cog_loop", None)
                if loop is not None:
                    loop.call_soon_threadsafe(registry.abort_all)
            super().handle_exit(sig, frame)

        async def serve(self, sockets: list[socket.socket] | None = None) -> None:
            self._cog_loop = asyncio.get_running_loop()
            await super().serve(sockets)

    server = Server(config)
    bound = sock.getsockname()[1]
    sys.stdout.write(url_for(host, bound, token) + "\n")
    sys.stdout.flush()
    from cogcli.shown.visible import say

    say(f"serving {root} (Ctrl-C to stop)")
    sys.stderr.flush()
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn re-raises the SIGINT it caught once it has shut down
        sys.stderr.write("cog: stopped\n")
        return EXIT_INTERRUPTED
    finally:
        sock.close()
    return EXIT_OK
