"""``cog chat``'s session built while its prompt already takes keys (issue 53).

What can ask the person or refuse cheaply (:meth:`Session.check`: the workspace's commands and
hooks approved, the run's limits) is done before the prompt is drawn; what is only slow
(:meth:`Session.build`: the model client, telemetry, the undo journal, the tools, the agent's own
tools — and whatever the chat's runs import) runs here, in a worker thread, while the person
types. A line sent before it ends waits for it (``setting up…`` when that takes a while); a
failure ends the prompt with what cog says of it, as it would have been said before the prompt.
While it runs, what it says (notes, warnings of the ``cogcli`` logger) is printed above the prompt.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import anyio

from cogcli.contract.errors import ConfigError

log = logging.getLogger("cogcli")

#: a line sent this long before the set-up ends waits in silence; longer, ``setting up…`` is said
QUIET_WAIT = 0.5
SETTING_UP = "setting up…"


class SetUpFailed(Exception):
    """The session could not be built: ``message`` is what cog says of it (exit 2)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class BackgroundSetUp:
    """One session's :meth:`~cogcli.session.Session.build`, then ``then`` (the chat's own
    imports and checks), run once in a worker thread by :meth:`run`."""

    def __init__(self, session: Any, then: Callable[[], None] | None = None) -> None:
        self.session = session
        self.then = then
        #: set in the worker when it ended, either way (a thread that never ran an event loop can wait on it)
        self.finished = threading.Event()
        #: what cog says of the failure, once the set-up failed
        self.problem: str | None = None
        #: the worker began (then :attr:`finished` comes; a run cancelled before never starts it)
        self.started = False
        self._done: anyio.Event | None = None

    @property
    def ready(self) -> bool:
        """The session is built (its tools may be listed)."""
        return self.finished.is_set() and self.problem is None

    async def run(self, app: Any = None) -> None:
        """Build in a worker thread; meanwhile what is said goes above the prompt. A failure ends
        ``app`` (the prompt) if it runs, with :class:`SetUpFailed`."""
        done = self._event()
        try:
            with said_above_prompt():
                await anyio.to_thread.run_sync(self._build)
        finally:
            done.set()
        if self.problem is not None and app is not None:
            self.end_prompt(app)

    async def run_once_drawn(self, app: Any) -> None:
        """:meth:`run`, begun once ``app`` (the prompt) is on the screen: a worker thread importing
        beside its first draw only slows that down (one interpreter lock); at most half a second later."""
        drawn = anyio.Event()

        def on_render(_app: Any) -> None:
            drawn.set()

        app.after_render += on_render
        with anyio.move_on_after(0.5):
            await drawn.wait()
        app.after_render -= on_render
        await self.run(app)

    def end_prompt(self, app: Any) -> None:
        """End the running prompt ``app`` when the set-up failed (also its ``pre_run``: a failure
        that came while no prompt ran ends the next one as soon as it starts)."""
        if self.problem is not None and app.is_running and not app.is_done:
            app.exit(exception=SetUpFailed(self.problem))

    async def wait(self) -> None:
        """Wait until the set-up ended (a line sent before); raises :class:`SetUpFailed`."""
        done = self._event()
        if not done.is_set():
            with anyio.move_on_after(QUIET_WAIT):
                await done.wait()
            if not done.is_set():
                sys.stdout.write(SETTING_UP + "\n")
                sys.stdout.flush()
                await done.wait()
        if self.problem is not None:
            raise SetUpFailed(self.problem)

    def _event(self) -> anyio.Event:
        if self._done is None:  # made in the event loop that waits on it
            self._done = anyio.Event()
            if self.finished.is_set():
                self._done.set()
        return self._done

    def _build(self) -> None:
        self.started = True
        try:
            self.session.build()
            if self.then is not None:
                self.then()
        except ConfigError as exc:
            self.problem = exc.message
        except OSError as exc:  # the workspace's .cog folder: a file, a full disk
            from cogcli.session import store_problem

            self.problem = store_problem(self.session.root, exc)
        except Exception as exc:  # never a traceback: what broke, said as a run's failure is
            from cogcli.contract.errors import where_it_broke

            log.debug("setting up the chat failed", exc_info=True)
            self.problem = f"cog chat could not start: {type(exc).__name__}: {exc}{where_it_broke(exc)}"
        finally:
            self.finished.set()


@contextmanager
def said_above_prompt() -> Iterator[None]:
    """While it lasts, stdout, stderr and the ``cogcli`` logger's terminal handler write above a
    running prompt (prompt_toolkit's :func:`~prompt_toolkit.patch_stdout.patch_stdout`), from any
    thread; with no prompt running, straight to the terminal."""
    from prompt_toolkit.patch_stdout import patch_stdout

    streams = (sys.stdout, sys.stderr)
    handlers = [h for h in log.handlers if isinstance(h, logging.StreamHandler) and h.stream in streams]
    with patch_stdout(raw=True):
        kept = [(h, h.stream) for h in handlers]
        for handler, _ in kept:
            handler.setStream(sys.stderr)
        try:
            yield
        finally:
            for handler, stream in kept:
                handler.setStream(stream)
