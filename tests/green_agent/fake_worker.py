"""A small worker speaking the worker HTTP API (worker/api.py), for the green agent's adapter tests.

Trials finish one after another every ``trial_sec`` seconds, so a run's state is a function of the
clock and of what is stored in ``state_dir``: a fake worker killed and restarted on the same state
dir resumes every run, with the same trial ids. Rows carry worker-private extras (``_private_*``,
private artifact refs, local paths) that must never reach public results.

Run standalone: ``python fake_worker.py --port P --state-dir D [--trial-sec S] [--no-events]
[--token T]``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import time
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from worker.api import (
    EVENT_END,
    EVENT_ROW,
    EVENT_STATUS,
    Progress,
    RunCreated,
    RunRequest,
    RunStatus,
)


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).isoformat()


class FakeWorker:
    def __init__(
        self,
        state_dir: Path,
        *,
        trial_sec: float = 0.05,
        events: bool = True,
        token: str | None = None,
        fail_after: int | None = None,
        drop_stream_after: float | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.trial_sec = trial_sec
        self.serve_events = events
        self.token = token
        self.fail_after = fail_after  # the run fails (status "failed") after this many trials
        self.drop_stream_after = drop_stream_after  # event streams break after this many seconds
        self.dropped_streams = 0

    # -- storage -------------------------------------------------------------------------------

    def _path(self, run_id: str) -> Path:
        return self.state_dir / f"{run_id}.json"

    def load(self, run_id: str) -> dict[str, Any] | None:
        path = self._path(run_id)
        if not path.is_file():
            return None
        data: dict[str, Any] = json.loads(path.read_text())
        return data

    def save(self, run: dict[str, Any]) -> None:
        tmp = self._path(run["run_id"]).with_suffix(".tmp")
        tmp.write_text(json.dumps(run))
        tmp.replace(self._path(run["run_id"]))

    def runs(self) -> list[dict[str, Any]]:
        return [json.loads(p.read_text()) for p in sorted(self.state_dir.glob("*.json"))]

    # -- state as a function of time -----------------------------------------------------------

    def _row(self, run: dict[str, Any], index: int, cancelled: bool) -> dict[str, Any]:
        task = run["trials"][index]
        digest = hashlib.sha256(f"{run['run_id']}/{index}".encode()).hexdigest()[:8]
        passed = index % 2 == 0 and not cancelled
        category = "worker_cancelled" if cancelled else None
        return {
            "task_id": task["task_id"],
            "trial_id": f"{task['task_id']}__agentbeats__{digest}",
            "task_set": run["request"]["task_set"],
            "task_set_digest": run["request"]["task_set_digest"],
            "condition": "with_skills",
            "score_eligible": not cancelled,
            "passed": passed,
            "reward": 1.0 if passed else 0.0,
            "max_score": 1.0,
            "time_used": self.trial_sec,
            "task_digest": task.get("task_digest"),
            "category": task.get("category"),
            "difficulty": task.get("difficulty"),
            "tags": task.get("tags", []),
            "has_skills": True,
            "agent_transport": "a2a",
            "participant_role": "agent",
            "infra_failure_type": category,
            "error_type": category,
            "artifact_refs": [f"local://proof/{run['run_id']}/{index}", "s3://bucket/key?sig=x"],
            "_private_proof_refs": [f"/var/jobs/{run['run_id']}/proof.json"],
            "worker_log_path": f"/var/jobs/{run['run_id']}/trial-{index}/agent.txt",
        }

    def status(self, run: dict[str, Any], now: float | None = None) -> RunStatus:
        now = time.time() if now is None else now
        total = len(run["trials"])
        stop = run.get("cancelled_at") or now
        finished = min(total, int((stop - run["created"]) / self.trial_sec))
        failed = self.fail_after is not None and finished >= self.fail_after
        if failed:
            finished = self.fail_after or 0
        rows = [self._row(run, i, cancelled=False) for i in range(finished)]
        updated = now
        if failed:
            state = "failed"
        elif run.get("cancelled_at"):
            rows += [self._row(run, i, cancelled=True) for i in range(finished, total)]
            state = "cancelled"
            updated = run["cancelled_at"]
        elif finished >= total:
            state = "completed"
            updated = run["created"] + total * self.trial_sec
        else:
            state = "running"
        tasks = {
            t["task_id"] + f"#{i}": ("finished" if i < len(rows) else "running")
            for i, t in enumerate(run["trials"])
        }
        return RunStatus(
            run_id=run["run_id"],
            status=state,  # type: ignore[arg-type]
            created_at=_iso(run["created"]),
            updated_at=_iso(updated),
            progress=Progress(
                total=total, finished=len(rows), running=0 if state != "running" else 1
            ),
            tasks=tasks,
            rows=rows,
            worker_meta={"_private_proof_manifest": "/var/jobs/x/proof.json", "revision": "test"},
            error="sandbox backend crashed" if state == "failed" else None,
        )

    # -- HTTP ----------------------------------------------------------------------------------

    def _authorized(self, request: Request) -> bool:
        if self.token is None:
            return True
        return request.headers.get("authorization") == f"Bearer {self.token}"

    async def create(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        try:
            body = RunRequest.model_validate(await request.json())
        except (ValidationError, ValueError) as exc:
            return JSONResponse({"error": str(exc)[:500]}, status_code=400)
        instances = int(body.config.get("num_instances", 1) or 1)
        run = {
            "run_id": uuid.uuid4().hex[:16],
            "created": time.time(),
            "cancelled_at": None,
            "request": body.model_dump(mode="json"),
            "trials": [t.model_dump(mode="json") for t in body.tasks for _ in range(instances)],
        }
        self.save(run)
        created = RunCreated(run_id=run["run_id"], status="running")
        return JSONResponse(created.model_dump(), status_code=201)

    async def get(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        run = self.load(request.path_params["run_id"])
        if run is None:
            return JSONResponse({"error": "unknown run"}, status_code=404)
        return JSONResponse(self.status(run).model_dump(mode="json"))

    async def cancel(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        run = self.load(request.path_params["run_id"])
        if run is None:
            return JSONResponse({"error": "unknown run"}, status_code=404)
        if self.status(run).status == "running":
            run["cancelled_at"] = time.time()
            self.save(run)
        return JSONResponse(self.status(run).model_dump(mode="json"))

    async def events(self, request: Request) -> Response:
        if not self.serve_events:
            return JSONResponse({"error": "no event stream"}, status_code=404)
        if not self._authorized(request):
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        run_id = request.path_params["run_id"]
        if self.load(run_id) is None:
            return JSONResponse({"error": "unknown run"}, status_code=404)

        async def stream() -> AsyncIterator[bytes]:
            sent = 0
            first = True
            opened = time.monotonic()
            while True:
                if self.drop_stream_after and time.monotonic() - opened > self.drop_stream_after:
                    self.dropped_streams += 1
                    raise RuntimeError("connection dropped mid-stream")
                run = self.load(run_id)
                assert run is not None
                status = self.status(run)
                if first:
                    head = status.model_dump(mode="json", exclude={"rows"})
                    yield f"event: {EVENT_STATUS}\ndata: {json.dumps(head)}\n\n".encode()
                    first = False
                for row in status.rows[sent:]:
                    sent += 1
                    data = {"run_id": run_id, "row": row, "progress": status.progress.model_dump()}
                    yield f"event: {EVENT_ROW}\ndata: {json.dumps(data)}\n\n".encode()
                if status.status != "running":
                    final = json.dumps(status.model_dump(mode="json"))
                    yield f"event: {EVENT_END}\ndata: {final}\n\n".encode()
                    return
                await asyncio.sleep(min(0.01, self.trial_sec / 4))

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def healthz(self, request: Request) -> Response:
        return JSONResponse({"ok": True})

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/runs", self.create, methods=["POST"]),
                Route("/runs/{run_id}", self.get, methods=["GET"]),
                Route("/runs/{run_id}/events", self.events, methods=["GET"]),
                Route("/runs/{run_id}/cancel", self.cancel, methods=["POST"]),
                Route("/healthz", self.healthz, methods=["GET"]),
            ]
        )


def main() -> None:
    import uvicorn

    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--trial-sec", type=float, default=0.05)
    parser.add_argument("--no-events", action="store_true")
    parser.add_argument("--token", default=None)
    args = parser.parse_args()
    worker = FakeWorker(
        args.state_dir, trial_sec=args.trial_sec, events=not args.no_events, token=args.token
    )
    uvicorn.run(worker.app(), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
