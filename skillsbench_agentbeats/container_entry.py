"""Entry point of the service images: drop root, optionally start an embedded worker, run a command.

`python -m skillsbench_agentbeats.container_entry [CMD] [ARGS…]`

- A first argument that is not a program on PATH (`--help`, `--host …`, `placeholder …`) is an
  argument of the image's service: `SKILLSBENCH_SERVICE_COMMAND` (e.g. `skillsbench-agentbeats
  green`) is put in front. So `docker run IMAGE --help`, the AgentBeats convention
  `docker run IMAGE --host H --port P --card-url U`, and a full command line given by a manifest
  (`skillsbench-agentbeats green …`, `sh -lc '…'`) all work, whether the runtime replaces the
  image's entrypoint or only its command.

- The images run as the unprivileged `skillsbench` user (their `USER`), so nothing here is needed
  for that: Amber's helper runs a manifest's program directly and never this entry. Started as
  root anyway (`docker run --user 0`), it switches to `SKILLSBENCH_RUN_AS` (default `skillsbench`)
  with the Docker socket's group added; `SKILLSBENCH_RUN_AS=root` keeps root. Started as non-root,
  nothing changes (give the socket's group with `docker run --group-add`).
- With `SKILLSBENCH_EMBEDDED_WORKER=1` (the default, in code, when the service is
  `skillsbench-agentbeats green`; `0` turns it off), when the command is the service command
  itself (not a shell line that may start its own worker), it first starts
  `skillsbench-agentbeats worker` with `SKILLSBENCH_EMBEDDED_WORKER_ARGS` on loopback, waits for
  its port, points `SKILLSBENCH_WORKER_URL` at it when unset, then runs CMD; it forwards SIGTERM and
  SIGINT to both and exits when either exits (stopping the other), as the published green
  manifest's entrypoint does with a shell. It does not when `SKILLSBENCH_WORKER_URL` (even empty:
  the mock) or `SKILLSBENCH_WORKER_SLOT_URL` names another worker.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

from green_agent.settings import WORKER_SLOT_URL, WORKER_URL

DOCKER_SOCKET = "/var/run/docker.sock"
DEFAULT_USER = "skillsbench"
DEFAULT_WORKER_ARGS = (
    "--host 127.0.0.1 --port 9010 --jobs-dir /app/jobs/agentbeats-worker --tasks-dir /app/tasks"
    " --environment docker"
)
WORKER_START_TIMEOUT_SEC = 60.0
# The service whose entry starts an embedded worker unless SKILLSBENCH_EMBEDDED_WORKER=0.
EMBEDDED_WORKER_SERVICE = ("skillsbench-agentbeats", "green")
HELP_FLAGS = frozenset({"-h", "--help", "--version"})


def drop_privileges(user: str, socket_path: str = DOCKER_SOCKET) -> None:
    """Become `user`, keeping access to the Docker socket through its group."""
    if os.geteuid() != 0 or user in ("", "root", "0"):
        return
    import grp
    import pwd

    entry = pwd.getpwnam(user)
    groups = {entry.pw_gid, *(g.gr_gid for g in grp.getgrall() if user in g.gr_mem)}
    with contextlib.suppress(OSError):
        groups.add(os.stat(socket_path).st_gid)
    os.setgroups(sorted(groups))
    os.setgid(entry.pw_gid)
    os.setuid(entry.pw_uid)
    os.environ["HOME"] = entry.pw_dir
    os.environ["USER"] = user


def worker_endpoint(args: Sequence[str]) -> tuple[str, int]:
    """The host and port an embedded worker command line listens on."""
    host, port = "127.0.0.1", 9010
    items = list(args)
    for flag, value in itertools.pairwise(items):
        if flag == "--host":
            host = value
        elif flag == "--port":
            port = int(value)
    return host, port


def wait_for_port(host: str, port: int, timeout: float, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"the embedded worker exited with code {proc.returncode}")
        try:
            with socket.create_connection((host, port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"the embedded worker did not listen on {host}:{port} in {timeout:.0f}s")


def supervise(children: list[subprocess.Popen[bytes]]) -> int:
    """Wait until one child exits; stop the others; return the first exit code."""

    def forward(signum: int, _frame: object) -> None:
        for child in children:
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    code: int | None = None
    while code is None:
        for child in children:
            if child.poll() is not None:
                code = child.returncode
                break
        else:
            time.sleep(0.2)
    for child in children:
        if child.poll() is None:
            child.terminate()
    for child in children:
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    return code if code >= 0 else 128 - code


def full_command(args: Sequence[str], service: Sequence[str]) -> list[str]:
    """`args` as given when it names a program, else the service command followed by `args`."""
    if args and shutil.which(args[0]) is not None:
        return list(args)
    return [*service, *args]


def uses_embedded_worker(env: Mapping[str, str], embedded_url: str) -> bool:
    """False when the configuration names another worker (a URL, even empty, or the slot).

    A second worker on the same Docker host would also reap the first one's containers at start.
    """
    if (env.get(WORKER_SLOT_URL) or "").strip():
        return WORKER_URL in env and _same_url(env[WORKER_URL], embedded_url)
    if WORKER_URL not in env:
        return True
    return _same_url(env[WORKER_URL], embedded_url)


def wants_embedded_worker(env: Mapping[str, str], service: Sequence[str]) -> bool:
    """``SKILLSBENCH_EMBEDDED_WORKER`` when set, else on for the green service (the default lives
    here, in code: an image ``ENV`` would not reach a runtime that bypasses this entry)."""
    default = "1" if tuple(service) == EMBEDDED_WORKER_SERVICE else "0"
    value = env.get("SKILLSBENCH_EMBEDDED_WORKER", default)
    return value.strip().lower() in ("1", "true", "yes")


def _same_url(a: str, b: str) -> bool:
    return a.strip().rstrip("/") == b.rstrip("/")


def main(argv: Sequence[str] | None = None) -> int:
    service = shlex.split(os.environ.get("SKILLSBENCH_SERVICE_COMMAND", ""))
    command = full_command(list(sys.argv[1:] if argv is None else argv), service)
    if not command:
        print(
            "usage: container_entry CMD [ARGS…] (or set SKILLSBENCH_SERVICE_COMMAND)",
            file=sys.stderr,
        )
        return 2
    drop_privileges(os.environ.get("SKILLSBENCH_RUN_AS", DEFAULT_USER))
    embedded = wants_embedded_worker(os.environ, service)
    runs_service = bool(service) and command[: len(service)] == service
    worker_args = shlex.split(
        os.environ.get("SKILLSBENCH_EMBEDDED_WORKER_ARGS", DEFAULT_WORKER_ARGS)
    )
    host, port = worker_endpoint(worker_args)
    wanted = embedded and runs_service and uses_embedded_worker(os.environ, f"http://{host}:{port}")
    if not wanted or HELP_FLAGS.intersection(command):
        os.execvp(command[0], command)
    worker = subprocess.Popen(["skillsbench-agentbeats", "worker", *worker_args])
    try:
        wait_for_port(host, port, WORKER_START_TIMEOUT_SEC, worker)
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        if worker.poll() is None:
            worker.kill()
        return 1
    env = dict(os.environ)
    env.setdefault(WORKER_URL, f"http://{host}:{port}")
    main_process = subprocess.Popen(command, env=env)
    return supervise([main_process, worker])


if __name__ == "__main__":
    sys.exit(main())
