"""The warm servers of one session's checker: where a language server is clearly faster than a
process per edit (measured: benchmarks/diagnostics_server.py), it answers after changes instead.

- ``tsc``: ``tsserver``, TypeScript's own server (node_modules/.bin, beside tsc). A tsc process
  re-checks the whole project each time (seconds on 200 files, more under load); the warm server
  re-checks the changed file (~0.15 s).

Every other source stays a process per edit (ruff takes ~0.1 s; the type checkers of Python, Go
and Rust are not served yet). The ``diagnostics`` tool still runs the tsc process over the whole
project; ``diagnostics_off = ["tsc"]`` turns both off.

A server is started on the first check of its project, behind the same sandbox prefix as the
process (:func:`~workspace_tools.diagnostics.sandboxed.sandboxed_command`: no network, the workspace
writable, the toolchain read-only), kept for the session and ended with it (:meth:`Servers.close`,
from the tools' ``close``). One that dies is started again once; a second death, and the process
runs after changes for the rest of the session. An answer over the time budget ends the server and
is said like a slow process (the checker skips the source after changes from then on).

Only the changed files are asked about, as ``tsc``'s verdict is only compared on them: an edit that
breaks a file importing the changed one is not reported (run ``diagnostics`` for the whole project).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from cogcli.contract.details import Diagnostic
from workspace_tools.diagnostics import parsers
from workspace_tools.diagnostics.sandboxed import Ran, sandboxed_command
from workspace_tools.diagnostics.sources import Found, Source
from workspace_tools.diagnostics.tsserver import Refused, ServerGone, TsServer
from workspace_tools.sandbox.bwrap import SandboxMode
from workspace_tools.sandbox.environment import PassedEnv
from workspace_tools.sandbox.leftovers import strip_after
from workspace_tools.workspace.paths import Workspace

log = logging.getLogger("cogcli")

#: the sources served by a warm server after changes
SERVED = frozenset({"tsc"})


@dataclass
class Served:
    """The server's verdict as a process's would be (``ran``) and its problems, already read."""

    ran: Ran
    problems: list[Diagnostic]


class Servers:
    def __init__(self, workspace: Workspace, *, sandbox: SandboxMode, passed: PassedEnv) -> None:
        self.workspace = workspace
        self.sandbox: SandboxMode = sandbox
        self.passed = passed
        self.running: dict[tuple[str, Path], TsServer] = {}
        #: the sources served here (the benchmark empties it to time the process)
        self.served = SERVED
        self._deaths: dict[tuple[str, Path], int] = {}
        self._started_ns: dict[tuple[str, Path], int] = {}
        self._busy: set[tuple[str, Path]] = set()

    def serves(self, source: Source, found: Found, root: Path) -> bool:
        """Whether ``source`` in ``root`` is answered by a server (else a process runs)."""
        return (source.name in self.served and self._deaths.get((source.name, root), 0) < 2
                and Path(found.program).with_name("tsserver").exists())

    async def check(self, source: Source, found: Found, root: Path, files: list[Path], *, budget: float,
                    sandbox_only: bool, rel: parsers.Rel) -> Served | None:
        """Ask the project's server about ``files`` within ``budget`` seconds; None: run the process
        instead (the server died twice, or refused a request)."""
        import anyio

        key = (source.name, root)
        while key in self._busy:  # one check at a time a server (two edits in one turn): it opens and closes files
            await anyio.sleep(0.01)
        self._busy.add(key)
        try:
            return await self._check(key, source, found, root, files, budget=budget, sandbox_only=sandbox_only, rel=rel)
        finally:
            self._busy.discard(key)

    async def _check(self, key: tuple[str, Path], source: Source, found: Found, root: Path, files: list[Path], *, budget: float,
                     sandbox_only: bool, rel: parsers.Rel) -> Served | None:
        import anyio

        started = time.perf_counter()
        while True:
            server = self.running.get(key)
            if server is None:
                prefix, extra = await sandboxed_command(self.workspace, source, found, root, sandbox=self.sandbox, passed=self.passed)
                if not prefix and sandbox_only:
                    return Served(Ran(exit_code=None, output="", duration=0.0, sandboxed=False, refused=True), [])
                argv = [*prefix, str(Path(found.program).with_name("tsserver"))]
                self._started_ns[key] = time.time_ns()
                server = self.running[key] = TsServer(argv, cwd=root, env=self.passed.child_env(extra, bool(prefix)),
                                                               sandboxed=bool(prefix))
            # open: the files asked about, as they are now; closed: the others (the server reads them from
            # disk again, so a file changed since by a command is not kept stale)
            texts: dict[str, str | None] = {f: None for f in server.opened}
            texts.update({str(f): _text(f) for f in files})
            asked = [str(f) for f in files if texts[str(f)] is not None]
            answer = None
            try:
                with anyio.move_on_after(max(0.0, budget - (time.perf_counter() - started))):
                    await server.sync(texts, root)
                    answer = await server.diagnostics(asked, root / "tsconfig.json")
            except Refused as exc:  # a request refused: the process answers this time, a fresh server the next
                log.warning("tsserver in %s: %s; tsc runs as a process for this check", root, exc)
                self._drop(key)
                return None
            except ServerGone:
                self._drop(key)
                self._deaths[key] = self._deaths.get(key, 0) + 1
                if self._deaths[key] >= 2:
                    log.warning("tsserver in %s died twice; tsc runs as a process after changes", root)
                    return None
                log.info("tsserver in %s died; starting it again", root)
                continue
            sandboxed = server.sandboxed
            removed = await strip_after(self.workspace.root, [h for h, _ in found.invocation.writable],
                                        since_ns=self._started_ns.get(key, 0))
            took = time.perf_counter() - started
            if answer is None:  # over the budget: it is busy for who knows how long, and the source is skipped from now on
                self._drop(key)
                return Served(Ran(exit_code=None, output="", duration=took, sandboxed=sandboxed, timed_out=True, removed=removed), [])
            return Served(Ran(exit_code=0, output="", duration=took, sandboxed=sandboxed, removed=removed),
                          parsers.tsserver_items(answer, rel, source.name))

    def _drop(self, key: tuple[str, Path]) -> None:
        server = self.running.pop(key, None)
        if server is not None:
            server.close()

    def close(self) -> None:
        """End every server (the session is over); idempotent."""
        for key in list(self.running):
            self._drop(key)


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None
    except OSError:
        return None
