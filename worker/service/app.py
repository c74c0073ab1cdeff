"""The worker's HTTP service (Starlette): create, watch and cancel runs.

Routes: ``POST /runs``, ``GET /runs/{id}``, ``GET /runs/{id}/events`` (server-sent events),
``POST /runs/{id}/cancel``, ``GET /healthz``. With a token, every route but ``/healthz`` needs
``Authorization: Bearer <token>``. Errors are JSON ``{"error": <code>, "detail": <reason>}``
(plus ``"field"`` for a request that fails validation); never a bare 500 for bad input.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from worker.api import EVENT_END, RunCreated
from worker.core import json_text
from worker.runs.admission import Rejected, check_script_agent, parse_request
from worker.runs.catalog import UnknownTask
from worker.runs.engine import KEEPALIVE, Engine, RunNotFound

log = logging.getLogger(__name__)
_T = TypeVar("_T")

TOKEN_VAR = "SKILLSBENCH_WORKER_TOKEN"
OPEN_PATHS = frozenset({"/healthz"})
SSE_KEEPALIVE_SEC = 15.0
MAX_BODY_BYTES = 8 * 1024 * 1024


async def status_response(doc: dict[str, Any]) -> Response:
    """A run status as JSON, its per-trial parts (``tasks``, ``_private_proof_refs``, ``rows``)
    encoded a slice at a time with yields to the event loop in between: 10,000 rows in one
    call held the loop for tens of milliseconds."""
    parts: list[bytes] = []
    for part in json_text.document_parts(doc):
        parts.append(part)
        await asyncio.sleep(0)
    return Response(b"".join(parts), media_type="application/json")


def error(status: int, code: str, detail: str, **extra: Any) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail, **extra}, status_code=status)


class BearerAuth:
    """Pure ASGI (so streaming responses pass through untouched)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.token or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        given = headers.get(b"authorization", b"").decode("latin-1")
        scheme, _, credential = given.partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            credential.strip().encode(), self.token.encode()
        ):
            response = error(401, "unauthorized", "missing or wrong bearer token")
            response.headers["WWW-Authenticate"] = "Bearer"
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _until(source: AsyncIterator[_T], stop: asyncio.Event | None) -> AsyncIterator[_T]:
    """``source``'s items until it ends or ``stop`` is set, whichever comes first."""
    stopped = asyncio.ensure_future(stop.wait()) if stop is not None else None
    try:
        while True:
            step = asyncio.ensure_future(anext(source))
            if stopped is not None:
                await asyncio.wait({step, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if not step.done():
                    step.cancel()
                    with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                        await step
                    return
            try:
                item = await step
            except StopAsyncIteration:
                return
            yield item
    finally:
        if stopped is not None:
            stopped.cancel()
        close = getattr(source, "aclose", None)
        if close is not None:
            await close()


def create_app(
    engine: Engine,
    *,
    token: str | None = None,
    manage_engine: bool = True,
    engine_started: bool = False,
    script_dir: Path | None = None,
    stopping: asyncio.Event | None = None,
) -> ASGIApp:
    """The ASGI app. With ``manage_engine`` the app starts (resumes) and closes the engine;
    with ``engine_started`` too, it only closes it (the ``worker`` command starts the engine
    before serving, so that an executor that cannot start is one error line, not a failed
    ASGI lifespan with its traceback).

    ``script_dir``: ``script:<file>`` agents are accepted only for files inside it (none: never).
    ``stopping``: set when the server starts to shut down; open event streams then end (a client
    reconnects or polls, as after any dropped stream), so a shutdown neither waits for them nor
    cancels them with a traceback.
    """

    async def create_run(request: Request) -> Response:
        # Stop reading at the limit: the 413 must bound memory, not follow a full read.
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                return error(413, "too_large", f"request body over {MAX_BODY_BYTES} bytes")
            chunks.append(chunk)
        body = b"".join(chunks)
        try:
            payload = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return error(400, "invalid_json", f"body is not JSON: {exc}")
        except RecursionError:
            return error(400, "invalid_json", "body is nested too deeply", field="(body)")
        try:
            run_request = await asyncio.to_thread(parse_request, payload)
            check_script_agent(run_request.agent, script_dir)
            run = await engine.submit(run_request)
        except Rejected as exc:
            return error(400, "invalid_request", str(exc), field=exc.field)
        except UnknownTask as exc:
            return error(422, "unknown_task", str(exc))
        except ValueError as exc:
            field = str(exc).split(":", 1)[0] if ":" in str(exc) else "(body)"
            return error(400, "invalid_request", str(exc), field=field)
        created = RunCreated(run_id=run.run_id, status=run.status)
        return JSONResponse(created.model_dump(), status_code=201)

    def _run_or_404(request: Request) -> Any:
        run_id = request.path_params["run_id"]
        try:
            return engine.get(run_id)
        except RunNotFound:
            return error(404, "unknown_run", f"no run {run_id!r}")

    async def get_run(request: Request) -> Response:
        run = _run_or_404(request)
        if isinstance(run, Response):
            return run
        return await status_response(engine.status_doc(run))

    async def run_events(request: Request) -> Response:
        run = _run_or_404(request)
        if isinstance(run, Response):
            return run

        async def stream() -> AsyncIterator[bytes]:
            events = engine.events(run.run_id, keepalive_sec=SSE_KEEPALIVE_SEC)
            async for name, data in _until(events, stopping):
                if name == KEEPALIVE:
                    yield b": keepalive\n\n"
                    continue
                # One line: compact JSON escapes every newline inside strings.
                yield b"event: %s\ndata: %s\n\n" % (name.encode(), json_text.encode(data))
                if name == EVENT_END:
                    return

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def cancel_run(request: Request) -> Response:
        run = _run_or_404(request)
        if isinstance(run, Response):
            return run
        try:
            run = await engine.cancel(run.run_id)
        except Exception as exc:  # the run is stuck in a state cancel cannot finish: say so
            log.exception("cancel of run %s failed", run.run_id)
            return error(409, "cancel_failed", f"the run could not be cancelled: {exc!r}")
        return await status_response(engine.status_doc(run))

    async def healthz(request: Request) -> Response:
        active = sum(1 for run in engine.runs() if not run.terminal)
        return JSONResponse(
            {
                "status": "ok",
                "environment": engine.settings.environment,
                "concurrency": engine.settings.concurrency,
                "active_runs": active,
            }
        )

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        codes = {404: "not_found", 405: "method_not_allowed"}
        return error(exc.status_code, codes.get(exc.status_code, "http_error"), str(exc.detail))

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return error(500, "internal_error", f"{type(exc).__name__}: {exc}")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        if manage_engine and not engine_started:
            await engine.start()
        try:
            yield
        finally:
            if manage_engine:
                await engine.close()

    app = Starlette(
        routes=[
            Route("/runs", create_run, methods=["POST"]),
            Route("/runs/{run_id}", get_run, methods=["GET"]),
            Route("/runs/{run_id}/events", run_events, methods=["GET"]),
            Route("/runs/{run_id}/cancel", cancel_run, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        exception_handlers={HTTPException: http_error, Exception: server_error},
        lifespan=lifespan,
    )
    return BearerAuth(app, token)
