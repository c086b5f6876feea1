"""The routes of ``cog serve``: the JSON/SSE API under ``/api/`` and the Studio page.

    POST /api/runs                          {"input", "model"?, "thread"?, "approval"?, "attempts"?} → {"runId", "threadId"}
                                            (``attempts`` N: best-of-N, :mod:`cogcli.server.attempt_runs`)
    GET  /api/runs                          runs in flight (and recently finished)
    GET  /api/runs/{runId}                  one run: status, pending approvals
    GET  /api/runs/{runId}/events           text/event-stream (Last-Event-ID resumes)
    GET  /api/runs/{runId}/jobs             its background commands: id, command, running, exitCode, ageS, bytesTotal
    POST /api/runs/{runId}/jobs/{jobId}/keep  the person keeps one past the run (keptPid, keptLog); 409 once it ended
    POST /api/runs/{runId}/approvals        {"toolCallId", "approved", "reason"?}
    POST /api/runs/{runId}/abort
    GET  /api/threads                       stored threads, newest first (``undone``: its last run was undone;
                                            ``undoneRuns``: the messageId of every run walked back)
    POST /api/threads/{threadId}/undo       {"to"?, "conversation"?, "dryRun"?} → the runs walked back, the files put back
    GET  /api/threads/{threadId}/events     a stored thread as wire events (JSON array, or SSE sent a part at a time;
                                            Last-Event-ID skips what a client has)
    GET  /api/workspace                     the workspace served and its default model
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from cogcli.contract.errors import ConfigError
from cogcli.settings.options import SettingFlags
from cogcli.shown.visible import visible
from cogcli.server.auth import Guard, allowed_hosts
from cogcli.server.live_runs import RunError, RunRegistry
from cogcli.server.sse import parse_last_event_id, run_stream

log = logging.getLogger("cogcli")

STATIC = Path(str(resources.files("cogcli.server") / "static"))

#: the page loads only what this server serves, and no other site may frame it
SECURITY_HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        b"base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),  # the token is in the page's URL
    (b"x-frame-options", b"DENY"),
]


class _Body(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore")


class StartRun(_Body):
    input: str = Field(min_length=1)
    model: str | None = None
    thread: str | None = None
    approval: Literal["ask", "auto"] = "ask"
    #: best-of-N: this many attempts side by side, the winner applied (2 to 8; None: one run)
    attempts: Any = None


class UndoRequest(_Body):
    #: walk back to before this run (its number or messageId); default: the newest run not undone
    to: str | None = None
    #: also rewind the conversation (the model no longer reads the undone runs)
    conversation: bool = False
    dry_run: bool = False


class Answer(_Body):
    tool_call_id: str
    approved: bool
    reason: str | None = None
    #: a best-of-N run's attempt the call belongs to (needed when its call id waits in two)
    attempt: int | None = None


def _error(status: int, code: str, message: str) -> JSONResponse:
    """An error response; its message (which may name workspace paths, commands, thread ids) has
    its control characters escaped, as every message cog shows a person."""
    return JSONResponse({"error": visible(message), "code": code}, status_code=status)


#: the largest request body the API reads (an instruction, an answer)
MAX_BODY = 1 << 20


async def _body(request: Request, model: type[_Body]) -> Any:
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise RunError(413, "TOO_LARGE", f"the request body is over {MAX_BODY // 1024} KiB")
    try:
        return model.model_validate_json(raw or b"{}")
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "body"
        raise RunError(400, "INVALID_REQUEST", f"{where}: {first.get('msg')}") from None


def create_app(
    root: Path, *, token: str, host: str = "127.0.0.1", default_model: str | None = None, limits: dict[str, Any] | None = None,
    flags: SettingFlags | None = None, attempts: Any = None,
) -> ASGIApp:
    """The ASGI app serving ``root``: every ``/api/`` request needs ``Authorization: Bearer token``;
    ``flags``: the settings of every run (``cog serve``'s; ``default_model`` and ``limits``, the
    budgets ``max_tokens`` and ``max_cost``, over them); ``attempts``: :mod:`cogcli.worktrees.best_of`
    for runs with ``attempts`` (None: those are refused)."""
    flags = (flags or SettingFlags()).replace(**{"model": default_model, **(limits or {})})
    registry = RunRegistry(root, flags=flags)
    registry.attempts_kit = attempts

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as tg:
            registry.task_group = tg
            try:
                yield
            finally:
                registry.task_group = None
                await registry.stop()

    async def handle(request: Request, action: Any) -> Response:
        try:
            return await action(request)
        except RunError as exc:
            return _error(exc.status, exc.code, exc.message)

    def route(action: Any) -> Any:
        async def endpoint(request: Request) -> Response:
            return await handle(request, action)

        return endpoint

    async def workspace(request: Request) -> Response:
        return JSONResponse({"name": root.name, "path": str(root), "model": _configured_model(root, flags)})

    async def start_run(request: Request) -> Response:
        body = await _body(request, StartRun)
        if body.attempts is not None:
            from cogcli.server.attempt_runs import check_attempts, start_attempts

            check_attempts(registry.attempts_kit, body.attempts, body.thread)
            run = await start_attempts(registry, body.input, model=body.model, approval=body.approval, count=body.attempts)
            return JSONResponse({"runId": run.id, "threadId": None, "attempts": run.attempts}, status_code=201)
        run = await registry.start(body.input, model=body.model, thread=body.thread, approval=body.approval)
        return JSONResponse({"runId": run.id, "threadId": run.thread_id}, status_code=201)

    async def list_runs(request: Request) -> Response:
        return JSONResponse([r.summary() for r in registry.list()])

    async def get_run(request: Request) -> Response:
        return JSONResponse(registry.get(request.path_params["run_id"]).summary())

    async def run_events(request: Request) -> Response:
        run = registry.get(request.path_params["run_id"])
        try:
            after = parse_last_event_id(request.headers.get("last-event-id"))
        except ValueError:
            raise RunError(400, "INVALID_REQUEST", "Last-Event-ID must be the seq (an integer) of the last event received") from None
        return EventSourceResponse(run_stream(run, after), ping=0, sep="\n", shutdown_grace_period=RUN_STOP_GRACE)

    async def run_jobs(request: Request) -> Response:
        from cogcli.session.background import rows_of

        rows = rows_of(registry.get(request.path_params["run_id"]).jobs)
        return JSONResponse([row.model_dump(mode="json", by_alias=True) for row in rows])

    async def keep_job(request: Request) -> Response:
        """The person's Keep: the run's background command outlives the run's session (its log and
        record in their state folder, :mod:`workspace_tools.shell.kept`; ``cog jobs`` lists it)."""
        from cogcli.contract.errors import ToolCallError
        from cogcli.session.background import rows_of

        run = registry.get(request.path_params["run_id"])
        job_id = request.path_params["job_id"]
        try:
            job = run.jobs.get(job_id) if run.jobs is not None else None
        except ToolCallError as exc:
            raise RunError(404, "NO_SUCH_JOB", exc.message) from None
        if job is None:
            raise RunError(404, "NO_SUCH_JOB", f"run {run.id} has started no background command")
        try:
            await anyio.to_thread.run_sync(job.keep, run.jobs.workspace)
        except ToolCallError as exc:
            raise RunError(409, "JOB_ENDED", exc.message) from None
        row = next(r for r in rows_of(run.jobs) if r.id == job_id)
        return JSONResponse(row.model_dump(mode="json", by_alias=True))

    async def answer(request: Request) -> Response:
        run = registry.get(request.path_params["run_id"])
        body = await _body(request, Answer)
        if run.approver is None:
            raise RunError(409, "NO_SUCH_APPROVAL", f"run {run.id} was started with approval auto: it asks for none")
        if run.attempts:  # best-of-N: the attempt may be named (cogcli.server.attempt_runs)
            waiting = run.approver.answer(body.tool_call_id, body.approved, body.reason, body.attempt)  # type: ignore[call-arg]
        else:
            waiting = run.approver.answer(body.tool_call_id, body.approved, body.reason)
        return JSONResponse({"toolCallId": body.tool_call_id, "approved": body.approved, "pending": waiting})

    async def abort(request: Request) -> Response:
        run = registry.get(request.path_params["run_id"])
        if run.finished:
            raise RunError(409, "FINISHED", f"run {run.id} already finished ({run.status})")
        run.signal.abort("aborted from the API")
        return JSONResponse({"runId": run.id, "aborting": True}, status_code=202)

    async def threads(request: Request) -> Response:
        return JSONResponse(await anyio.to_thread.run_sync(_threads, root))

    async def thread_events(request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        if "text/event-stream" in request.headers.get("accept", ""):  # a part at a time (cogcli.server.thread_stream)
            from cogcli.server.thread_stream import ThreadParts, thread_stream

            try:
                after = parse_last_event_id(request.headers.get("last-event-id"))
            except ValueError:
                raise RunError(400, "INVALID_REQUEST", "Last-Event-ID must be the seq (an integer) of the last event received") from None
            try:
                parts = await anyio.to_thread.run_sync(ThreadParts, root, thread_id)
            except ConfigError as exc:
                raise RunError(404, "NO_SUCH_THREAD", exc.message) from None
            return EventSourceResponse(thread_stream(parts, after), ping=0, sep="\n")
        try:
            events = await anyio.to_thread.run_sync(_thread_events, root, thread_id)
        except ConfigError as exc:
            raise RunError(404, "NO_SUCH_THREAD", exc.message) from None
        body = b"[" + b",".join(data for _, data in events) + b"]"
        return Response(body, media_type="application/json")

    async def undo(request: Request) -> Response:
        thread_id = request.path_params["thread_id"]
        body = await _body(request, UndoRequest)
        busy = registry.busy(thread_id)
        if busy is not None:
            raise RunError(409, "THREAD_BUSY", f"thread {thread_id} has a run in flight ({busy.id}); wait for its finish or abort it")
        return JSONResponse(await anyio.to_thread.run_sync(_undo, root, thread_id, body))

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"cache-control": "no-store"})

    routes = [
        Route("/", page),
        Route("/runs/{run_id}", page),
        Route("/threads/{thread_id}", page),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
        Route("/api/workspace", route(workspace)),
        Route("/api/runs", route(start_run), methods=["POST"]),
        Route("/api/runs", route(list_runs), methods=["GET"]),
        Route("/api/runs/{run_id}", route(get_run), methods=["GET"]),
        Route("/api/runs/{run_id}/events", route(run_events), methods=["GET"]),
        Route("/api/runs/{run_id}/jobs", route(run_jobs), methods=["GET"]),
        Route("/api/runs/{run_id}/jobs/{job_id}/keep", route(keep_job), methods=["POST"]),
        Route("/api/runs/{run_id}/approvals", route(answer), methods=["POST"]),
        Route("/api/runs/{run_id}/abort", route(abort), methods=["POST"]),
        Route("/api/threads", route(threads), methods=["GET"]),
        Route("/api/threads/{thread_id}/events", route(thread_events), methods=["GET"]),
        Route("/api/threads/{thread_id}/undo", route(undo), methods=["POST"]),
    ]
    async def not_found(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 404)
        if not request.url.path.startswith("/api/"):
            return Response("Not found: open the URL cog serve printed.\n", status_code=status, media_type="text/plain")
        if status == 405:
            return _error(405, "METHOD_NOT_ALLOWED", f"{request.method} is not allowed on {request.url.path} (see the API table in the README)")
        return _error(404, "NOT_FOUND", f"no such endpoint {request.url.path} (see the API table in the README)")

    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={404: not_found, 405: not_found})
    app.state.registry = registry
    guarded = Guard(_SecurityHeaders(app), token=token, hosts=allowed_hosts(host))
    guarded.registry = registry  # type: ignore[attr-defined]  # for the serve command's Ctrl-C
    return guarded


#: seconds an SSE stream may go on after the server was told to stop: aborted runs send their finish
RUN_STOP_GRACE = 20.0


class _SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *SECURITY_HEADERS]}
            await send(message)

        await self.app(scope, receive, sending)


def _configured_model(root: Path, flags: SettingFlags) -> str | None:
    from cogcli.settings.load import load_settings

    try:
        return load_settings(root, flags).model
    except ConfigError:
        return None


def _threads(root: Path) -> list[dict[str, Any]]:
    """Stored threads, newest first, each with the files its runs changed and whether its last run
    was undone (``cog undo`` / ``Session.undo`` left its undo record after it)."""
    from cogcli.threads.store import default_store, default_store_path, events_from_entries
    from cogcli.threads.undo import last_run, undone_runs

    if not default_store_path(root).exists():
        return []
    out: list[dict[str, Any]] = []
    with default_store(root) as store:
        for info in store.list_threads(limit=200):
            files: dict[str, dict[str, Any]] = {}
            entries = store.entries(info.id, kinds=("user", "run_end", "undo"))  # its runs and their ends, not its calls
            for event in events_from_entries(info.id, entries):
                for change in getattr(event, "files_changed", None) or []:
                    seen = files.setdefault(change.path, {"path": change.path, "added": 0, "removed": 0})
                    seen["added"] += change.added
                    seen["removed"] += change.removed
            out.append(
                {
                    "id": info.id,
                    "title": info.title,
                    "status": info.status,
                    "model": info.model,
                    "createdAt": info.created_at,
                    "updatedAt": info.updated_at,
                    "filesChanged": list(files.values()),
                    "undone": last_run(entries)[2],
                    "undoneRuns": undone_runs(entries),
                }
            )
    return out


def _undo(root: Path, thread_id: str, body: UndoRequest) -> dict[str, Any]:
    """``POST /api/threads/{id}/undo``: :meth:`Session.undo`, its plan as JSON; refusals as errors."""
    from cogcli.session import Session
    from cogcli.threads.undo import NothingToUndo, UndoRefused

    try:
        with Session(root) as session:
            plan = session.undo(thread_id, to=body.to, dry_run=body.dry_run, conversation=body.conversation)
    except UndoRefused as exc:
        raise RunError(409, exc.code, f"undo refused: {exc.message}") from None
    except NothingToUndo as exc:
        raise RunError(404 if exc.message.startswith("no thread") else 409, exc.code, exc.message) from None
    except ConfigError as exc:
        raise RunError(404, "NO_SUCH_THREAD", exc.message) from None
    return {
        "threadId": plan.thread_id,
        "dryRun": body.dry_run,
        "conversation": plan.conversation,
        "runs": [{"number": r.number, "messageId": r.message_id, "title": r.title} for r in plan.runs],
        "files": [{"path": f.path, "deleted": f.deletes, "created": f.creates, "byCommand": f.by_command} for f in plan.files],
        "folders": plan.folders,
        "notes": plan.notes,
    }


def _thread_events(root: Path, thread_id: str) -> list[tuple[int, bytes]]:
    from cogcli.threads.store import default_store, default_store_path
    from cogcli.render.jsonl import event_bytes

    if not default_store_path(root).exists():
        raise ConfigError(f"no thread {thread_id!r}: {root} has no stored threads yet")
    with default_store(root) as store:
        events = store.thread_events(thread_id)
    return [(e.seq if e.seq is not None else i, event_bytes(e)) for i, e in enumerate(events)]
