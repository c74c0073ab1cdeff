"""Green and worker started the way Amber's helper starts them, with a prebuilt task image.

Amber's helper (``amber-helper run``) executes the manifest's ``program.entrypoint`` itself (never
the image's ENTRYPOINT), passes only ``PATH``, ``HOME`` and ``TMPDIR`` from the image plus the
manifest's ``env``, and gives the worker a Docker socket that is Amber's Docker gateway: image
pull and inspect pass, ``POST /build`` does not. This test does the same on loopback:

- the programs and environments are rendered from our manifests (config defaults, the slots
  bound as in ``scenario-worker-local.json5``), with only what a container gives differently
  replaced: loopback instead of 0.0.0.0, free ports, the jobs folder, and the Docker socket path;
- the worker's ``DOCKER_HOST`` is a Unix-socket HTTP proxy in front of the real engine that
  answers 403 to every ``POST /build``;
- the task image is built beforehand, directly on the engine, under the tag the worker looks for.

An assessment through the green agent then completes with a scored row; nothing asked the proxy
to build. Skipped where no Docker Engine answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import json5
import pytest

from tests.support import REPO_ROOT, free_port

pytestmark = pytest.mark.docker

MANIFESTS = REPO_ROOT / "integrations" / "agentbeats"
TASK_ID = "csv-sales-summary"
BUILD_PATH = re.compile(r"(/v[0-9.]+)?/build")
INTERPOLATION = re.compile(r"\$\{(config|slots)\.([a-z0-9_]+)(?:\.url)?\}")


# --- a Docker API in front of the engine that refuses builds ---------------------------------


class BuildRefusingProxy:
    """HTTP over a Unix socket to the engine's socket, one request per connection (it asks the
    engine for ``Connection: close``, so every request is seen); ``POST /build`` gets 403 as from
    Amber's Docker gateway. Upgraded (hijacked) exec/attach streams are piped as they are."""

    def __init__(self, upstream: str, path: Path) -> None:
        self.upstream, self.path = upstream, path
        self.requests: list[tuple[str, str]] = []
        self.refused: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    def __enter__(self) -> BuildRefusingProxy:
        self._thread.start()
        start = asyncio.start_unix_server(self._handle, path=str(self.path))
        self._server = asyncio.run_coroutine_threadsafe(start, self._loop).result(10)
        return self

    def __exit__(self, *_exc: object) -> None:
        async def stop() -> None:
            self._server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            writer.close()
            return
        request_line, *headers = head.decode("latin-1").split("\r\n")[:-2]
        method, target, _ = request_line.split(" ", 2)
        path = urlsplit(target).path
        self.requests.append((method, path))
        if method == "POST" and BUILD_PATH.fullmatch(path):
            self.refused.append(path)
            await _discard_body(reader, headers)
            body = json.dumps({"message": "image builds are not allowed through this gateway"})
            writer.write(
                f"HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n{body}".encode()
            )
            await writer.drain()
            writer.close()
            return
        upgrade = any(h.lower().startswith("upgrade:") for h in headers)
        if not upgrade:
            headers = [h for h in headers if not h.lower().startswith("connection:")]
            headers.append("Connection: close")
        up_reader, up_writer = await asyncio.open_unix_connection(self.upstream)
        up_writer.write(("\r\n".join([request_line, *headers]) + "\r\n\r\n").encode("latin-1"))
        to_engine = asyncio.ensure_future(_pipe(reader, up_writer))
        to_client = asyncio.ensure_future(_pipe(up_reader, writer))
        try:
            if upgrade:
                await asyncio.gather(to_engine, to_client)
            else:
                await to_client  # the engine closes after its one response
                to_engine.cancel()
        finally:
            for w in (up_writer, writer):
                w.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()


async def _discard_body(reader: asyncio.StreamReader, headers: list[str]) -> None:
    fields = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in headers)}
    if "content-length" in fields:
        await reader.readexactly(int(fields["content-length"]))
    elif fields.get("transfer-encoding", "").lower() == "chunked":
        while size := int((await reader.readline()).split(b";")[0], 16):
            await reader.readexactly(size + 2)
        while (await reader.readline()).strip():
            pass  # trailers, then the empty line


def _engine_socket() -> str:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    if not host.startswith("unix://"):
        pytest.skip(f"the engine is not on a Unix socket (DOCKER_HOST={host})")
    return host.removeprefix("unix://")


# --- the programs, as Amber's helper runs them ------------------------------------------------


def _render(
    manifest: str, config: Mapping[str, Any], slots: Mapping[str, str]
) -> tuple[list[str], dict[str, str]]:
    """A manifest's ``program.entrypoint`` and ``program.env`` with config (defaults, then
    ``config``) and slot URLs interpolated, and ``when`` items kept only when present."""
    doc = json5.loads((MANIFESTS / manifest).read_text())
    props = doc.get("config_schema", {}).get("properties", {})
    values = {k: v["default"] for k, v in props.items() if "default" in v} | dict(config)

    def text(value: Any) -> str:
        return json.dumps(value) if isinstance(value, bool) else str(value)

    def interpolate(s: str) -> str:
        def one(m: re.Match[str]) -> str:
            return text(values[m[2]]) if m[1] == "config" else slots[m[2]]

        return INTERPOLATION.sub(one, s)

    def present(when: str) -> bool:
        source, _, name = when.partition(".")
        return name in (values if source == "config" else slots)

    program = doc["program"]
    argv: list[str] = []
    for item in program["entrypoint"]:
        if isinstance(item, str):
            argv.append(interpolate(item))
        elif present(item["when"]):
            argv.extend(interpolate(a) for a in item["argv"])
    env: dict[str, str] = {}
    for name, value in program.get("env", {}).items():
        if isinstance(value, str):
            env[name] = interpolate(value)
        elif present(value["when"]):
            env[name] = interpolate(value["value"])
    return argv, env


def _on_loopback(argv: list[str], port: int) -> list[str]:
    """What a container's network gives differently: listen on loopback, on a free port."""
    out = list(argv)
    out[out.index("--host") + 1] = "127.0.0.1"
    out[out.index("--port") + 1] = str(port)
    return out


def _helper_env(home: Path, manifest_env: Mapping[str, str]) -> dict[str, str]:
    """PATH, HOME and TMPDIR (what the helper keeps of the image's environment) and the
    manifest's ``env``; nothing else of this process's environment."""
    venv_bin = Path(sys.executable).parent
    return {
        "PATH": f"{venv_bin}{os.pathsep}/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "TMPDIR": str(home / "tmp"),
        **manifest_env,
    }


@contextlib.contextmanager
def _started(argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> Iterator[Any]:
    program = shutil.which(argv[0], path=env["PATH"])
    assert program is not None, f"{argv[0]} is not on the program's PATH"
    with open(log, "wb") as out:
        proc = subprocess.Popen([program, *argv[1:]], env=env, cwd=cwd, stdout=out, stderr=out)
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(url: str, proc: Any, log: Path, guard_sec: float = 120) -> None:
    deadline = time.monotonic() + guard_sec
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{url} exited {proc.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(url, timeout=2)
            return
        time.sleep(0.2)
    raise AssertionError(f"{url} did not answer in {guard_sec:g}s:\n{log.read_text()[-3000:]}")


def _prebuild_task_image(client: Any) -> str:
    """The task's image, built directly on the engine under the tag the worker computes."""
    from tests.support.docker_images import ensure_test_image
    from worker.runs.catalog import TaskCatalog
    from worker.sandbox._docker import images

    ensure_test_image(client, "python")  # tags python:3.11-slim (no registry here)
    task = TaskCatalog(REPO_ROOT / "tasks").get(TASK_ID)
    with_skills = task.skills_dir is not None
    skills_dir = task.config.environment.skills_dir
    env_dir = task.environment_dir
    tag = images.local_build_tag(client, TASK_ID, env_dir, with_skills, skills_dir)
    labels = {"skillsbench.test": "amber-like-start"}
    images.build_image(client, env_dir, tag, labels, with_skills, skills_dir)
    return tag


@pytest.mark.slow
def test_green_and_worker_as_amber_starts_them(docker_client: Any, tmp_path: Path) -> None:
    upstream = _engine_socket()
    sockets = Path(tempfile.mkdtemp(prefix="sb-amber-"))  # a short path: Unix sockets
    home = tmp_path / "home"
    (home / "tmp").mkdir(parents=True)
    token = secrets.token_hex(16)
    ports = {name: free_port() for name in ("worker", "green", "purple")}
    worker_url = f"http://127.0.0.1:{ports['worker']}"
    purple_url = f"http://127.0.0.1:{ports['purple']}"
    green_url = f"http://127.0.0.1:{ports['green']}"
    try:
        _prebuild_task_image(docker_client)
        with BuildRefusingProxy(upstream, sockets / "docker.sock") as proxy:
            # The proxy is the edge a regression would hit: a real Docker client through it can
            # inspect, but its build is refused with the engine's error shape.
            import docker

            through = docker.DockerClient(base_url=f"unix://{proxy.path}", timeout=60)
            assert through.ping()
            with pytest.raises(docker.errors.APIError) as refused:
                through.images.build(fileobj=io.BytesIO(b"FROM scratch\n"), rm=True)
            assert refused.value.status_code == 403
            assert len(proxy.refused) == 1
            through.close()

            # No gateway here: the worker's optional proxy slot stays unbound and the green
            # agent's proxy URL is empty (unset), so the participant is reached directly.
            argv, env = _render(
                "worker.json5",
                {"worker_token": token, "jobs_dir": str(tmp_path / "jobs" / "worker")},
                {},
            )
            assert env["DOCKER_HOST"] == "unix:///app/run/docker.sock"
            env["DOCKER_HOST"] = f"unix://{proxy.path}"  # where the mount is, here
            assert argv[-2:] == ["--task-image-builds", "never"]
            worker_argv = _on_loopback(argv, ports["worker"])

            green_argv, green_env = _render(
                "green-agent.json5", {"worker_token": token}, {"proxy": "", "worker": worker_url}
            )
            assert green_env["SKILLSBENCH_WORKER_SLOT_URL"] == worker_url
            green_argv = _on_loopback(green_argv, ports["green"])

            purple_argv, purple_env = _render("participant-placeholder.json5", {}, {})
            purple_argv = _on_loopback(purple_argv, ports["purple"])

            logs = tmp_path / "logs"
            logs.mkdir()
            with (
                _started(
                    worker_argv, _helper_env(home, env), tmp_path, logs / "worker.log"
                ) as worker,
                _started(
                    green_argv, _helper_env(home, green_env), tmp_path, logs / "green.log"
                ) as green,
                _started(
                    purple_argv, _helper_env(home, purple_env), tmp_path, logs / "purple.log"
                ) as purple,
            ):
                _wait_ready(f"{worker_url}/healthz", worker, logs / "worker.log")
                _wait_ready(f"{green_url}/.well-known/agent-card.json", green, logs / "green.log")
                _wait_ready(
                    f"{purple_url}/.well-known/agent-card.json", purple, logs / "purple.log"
                )
                config = {"task_set": "examples", "task_ids": [TASK_ID], "condition": "with_skills"}
                results_file = tmp_path / "results.json"
                done = subprocess.run(
                    [
                        sys.executable, "-m", "skillsbench_agentbeats", "assess",
                        "--participant", f"{purple_url}/", "--green", f"{green_url}/",
                        "--config", json.dumps(config), "--output", str(results_file),
                    ],
                    capture_output=True, text=True, timeout=900, cwd=tmp_path,
                )  # fmt: skip
                worker_log = (logs / "worker.log").read_text()[-4000:]
                assert done.returncode == 0, done.stderr[-3000:] + worker_log
            results = json.loads(results_file.read_text())
            assert results["status"] == "completed", results
            [envelope] = results["results"]
            [row] = envelope["results"]
            assert row["task_id"] == TASK_ID
            assert row["infra_failure_type"] is None, (row, worker_log)
            assert row["score_eligible"] is True, (row, worker_log)
            assert row["reward"] == 0.0  # the placeholder answers nothing
            # The worker ran its trial through the proxy, and never asked it to build.
            builds = [p for m, p in proxy.requests if m == "POST" and BUILD_PATH.fullmatch(p)]
            assert len(builds) == 1 and builds == proxy.refused  # only the probe above
            assert any(p.endswith("/containers/create") for _, p in proxy.requests)
    finally:
        shutil.rmtree(sockets, ignore_errors=True)
