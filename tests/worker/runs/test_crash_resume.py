"""SIGKILL a real worker process mid-run, restart it on the same jobs dir: every trial ends with
exactly one row, rows finished before the kill are kept as they were, unfinished trials re-run."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import httpx
import pytest

from tests.support import wait_for_http
from tests.worker.support import (
    free_port,
    make_task,
    process_cmdlines_containing,
    run_payload,
    script,
)
from worker.core.files import append_line
from worker.runs.store import read_run_document


def stored(run_file: Path) -> dict[str, Any]:
    """The run as stored (run.json with its journal applied): what a restarted worker sees."""
    return read_run_document(run_file.parent)


def finished_document(run_file: Path) -> dict[str, Any]:
    """The run document once the store has the run's end (the status answers ``completed`` as
    soon as the run ends; the document is rewritten right after)."""
    journal = run_file.parent / "journal.jsonl"
    # The status may reach the journal a moment before the final save compacts it away.
    assert _wait_until(
        lambda: stored(run_file)["status"] == "completed" and not journal.exists(), 60
    ), stored(run_file)
    document = json.loads(run_file.read_text())
    assert document["status"] == "completed"  # compacted into the document
    return dict(document)


class WorkerProcess:
    def __init__(self, jobs: Path, tasks: Path, environment: str = "local") -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "SKILLSBENCH_WORKER_TOKEN"}
        self.log = (jobs.parent / f"worker-{self.port}.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "worker", "--port", str(self.port), "--jobs-dir", str(jobs),
             "--tasks-dir", str(tasks), "--concurrency", "2", "--log-level", "warning",
             "--environment", environment, "--script-dir", str(jobs.parent)],
            stdout=self.log, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
        self.log.flush()
        wait_for_http(f"{self.url}/healthz", self.proc, what="worker", log=Path(self.log.name))

    def get(self, path: str) -> dict[str, Any]:
        return dict(httpx.get(f"{self.url}{path}", timeout=10).json())

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)
        self.log.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()


@pytest.fixture
def workers() -> Iterator[list[WorkerProcess]]:
    started: list[WorkerProcess] = []
    yield started
    for worker in started:
        worker.stop()


@pytest.fixture(params=["local", pytest.param("docker", marks=pytest.mark.docker)])
def environment(request: pytest.FixtureRequest) -> str:
    if request.param == "docker":
        client = request.getfixturevalue("docker_client")
        from tests.support.docker_images import ensure_test_image

        ensure_test_image(client, "python")
    return str(request.param)


def test_sigkill_and_restart_loses_and_duplicates_nothing(
    tmp_path: Path, workers: list[WorkerProcess], environment: str
) -> None:
    tasks, jobs = tmp_path / "tasks", tmp_path / "jobs"
    tasks.mkdir()
    task_ids = [f"answer-{i}" for i in range(3)]
    for task_id in task_ids:
        make_task(tasks, task_id)
    # Long enough that trials still run when the worker is killed on a busy host.
    marker = f"4.{int(time.time() * 1000) % 100000:05d}"
    agent = script(tmp_path, "slowish", f"sleep {marker}\necho 42 > /root/answer.txt\n")
    first = WorkerProcess(jobs, tasks, environment)
    workers.append(first)
    response = httpx.post(
        f"{first.url}/runs", json=run_payload(task_ids, agent=agent, num_instances=2), timeout=10
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    run_file = jobs / "runs" / run_id / "run.json"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:  # watch the store itself: that is what a restart sees
        states = [t["state"] for t in stored(run_file)["trials"].values()]
        if "finished" in states and "running" in states:
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"never saw finished and running trials together: {states}")
    first.kill()
    before = stored(run_file)
    kept = {key: t["row"] for key, t in before["trials"].items() if t["state"] == "finished"}
    interrupted = [key for key, t in before["trials"].items() if t["state"] == "running"]
    assert kept and interrupted

    second = WorkerProcess(jobs, tasks, environment)
    workers.append(second)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        status = second.get(f"/runs/{run_id}")
        if status["status"] not in ("queued", "running"):
            break
        time.sleep(0.2)
    assert status["status"] == "completed", status
    rows = status["rows"]
    assert len(rows) == 6
    assert len({row["trial_id"] for row in rows}) == 6
    assert sorted(status["tasks"]) == sorted(f"{t}#{i}" for t in task_ids for i in range(2))
    assert all(row["passed"] for row in rows), rows
    after = finished_document(run_file)
    for key, row in kept.items():
        assert after["trials"][key]["row"] == row  # finished before the kill: untouched
    for key in interrupted:
        attempts = after["trials"][key]["attempts"]
        assert [a["outcome"] for a in attempts] == ["abandoned", "finished"]
        assert after["trials"][key]["row"]["trial_id"] == attempts[-1]["trial_id"]
    assert process_cmdlines_containing(f"sleep {marker}") == []
    if environment == "docker":  # the restart reaped what the killed worker left behind
        client = docker.from_env()
        left = client.api.containers(all=True, filters={"label": [f"skillsbench.run={run_id}"]})
        client.close()
        assert left == []


def _identity(pid: int) -> dict[str, Any]:
    stat = Path(f"/proc/{pid}/stat").read_text()
    ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
    boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    return {"pid": pid, "start_ticks": ticks, "boot_id": boot}


def _wait_until(condition: Any, bound: float) -> bool:
    deadline = time.monotonic() + bound
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_sigkill_with_a2a_trials_leaves_no_process_and_resumes(
    tmp_path: Path, workers: list[WorkerProcess]
) -> None:
    """The bridges and the agents' commands die with the worker; the restart kills the host
    processes its crashed attempts recorded (only if still the same process), removes their
    sandbox folders, and finishes the run with one row per trial."""
    from tests.worker.support import purple_server

    tasks, jobs = tmp_path / "tasks", tmp_path / "jobs"
    tasks.mkdir()
    task_ids = [f"answer-{i}" for i in range(3)]
    for task_id in task_ids:
        make_task(tasks, task_id)
    marker = f"2.{int(time.time() * 1000) % 100000:05d}"
    with purple_server(f"slow-{marker}") as url:
        bridges = f"worker.bridge --url {url}"
        first = WorkerProcess(jobs, tasks)
        workers.append(first)
        response = httpx.post(
            f"{first.url}/runs", json=run_payload(task_ids, agent=f"a2a:{url}"), timeout=10
        )
        assert response.status_code == 201, response.text
        run_id = response.json()["run_id"]
        run_file = jobs / "runs" / run_id / "run.json"

        def running() -> bool:
            doc = stored(run_file)
            recorded = any(
                t["attempts"] and t["attempts"][-1]["host_processes"]
                for t in doc["trials"].values()
                if t["state"] == "running"
            )
            return recorded and bool(process_cmdlines_containing(f"sleep {marker}"))

        assert _wait_until(running, 90), "never saw a2a trials running"
        assert process_cmdlines_containing(bridges)
        first.kill()

        def left() -> list[str]:
            return process_cmdlines_containing(bridges) + process_cmdlines_containing(
                f"sleep {marker}"
            )

        assert _wait_until(lambda: not left(), 30), left()
        before = stored(run_file)
        interrupted = [k for k, t in before["trials"].items() if t["state"] == "running"]
        assert interrupted
        sandboxes = [
            jobs / before["trials"][k]["attempts"][-1]["trial_dir"] / "sandbox" for k in interrupted
        ]
        assert any(path.is_dir() for path in sandboxes)

        # Stand-ins for processes a crash left running (had their parent-death signal not
        # fired): one recorded as it is, one recorded with another start time (as if its pid
        # had been reused by an unrelated process: it must live).
        leftover = subprocess.Popen(["sleep", "300"], start_new_session=True)
        unrelated = subprocess.Popen(["sleep", "301"], start_new_session=True)
        try:
            other = _identity(unrelated.pid)
            other["start_ticks"] -= 1
            attempt = before["trials"][interrupted[0]]["attempts"][-1]
            attempt["host_processes"] += [_identity(leftover.pid), other]
            tmp = run_file.with_suffix(".edit")
            tmp.write_text(json.dumps(before))
            os.replace(tmp, run_file)

            second = WorkerProcess(jobs, tasks)
            workers.append(second)
            assert leftover.wait(30) == -signal.SIGKILL
            assert unrelated.poll() is None
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                status = second.get(f"/runs/{run_id}")
                if status["status"] not in ("queued", "running"):
                    break
                time.sleep(0.2)
        finally:
            for proc in (leftover, unrelated):
                proc.kill()
                proc.wait()
    assert status["status"] == "completed", status
    rows = status["rows"]
    assert len(rows) == 3 and len({row["trial_id"] for row in rows}) == 3
    assert all(row["passed"] for row in rows), rows
    after = finished_document(run_file)
    for key in interrupted:
        attempts = after["trials"][key]["attempts"]
        assert [a["outcome"] for a in attempts] == ["abandoned", "finished"]
    assert not any(path.exists() for path in sandboxes)
    assert left() == []


# ---- a full jobs disk ---------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 20 MB file system (tmpfs) for the jobs folder, so that it can be filled mid-run."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs for the jobs folder needs root")
    point = tmp_path / "jobs"
    point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=20m", "tmpfs", str(point)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield point
    # Lazily, with whatever a trial's sandbox may still have mounted inside it.
    subprocess.run(["umount", "-l", str(point)], check=False)


def fill(disk: Path) -> Path:
    """Write a file until the file system says ENOSPC; the file, to free the space later."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 4096, 512, 1):
            while True:
                try:
                    if os.write(fd, b"\0" * size) < size:
                        break
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
                    break
    finally:
        os.close(fd)
    return filler


def _log_says(worker: WorkerProcess, text: str) -> bool:
    return text in Path(worker.log.name).read_text(errors="replace")


def _saw_full(worker: WorkerProcess, run_id: str) -> bool:
    """The worker met the full disk: it says so (paused), or its run answers something else."""
    if _log_says(worker, "is full"):
        return True
    return worker.get(f"/runs/{run_id}")["status"] not in ("queued", "running")


def _start_disk_run(
    tmp_path: Path, jobs: Path, workers: list[WorkerProcess]
) -> tuple[WorkerProcess, str, Path, list[str]]:
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    task_ids = [f"answer-{i}" for i in range(4)]
    for task_id in task_ids:
        make_task(tasks, task_id)
    agent = script(tmp_path, "slowish", "sleep 1.5\necho 42 > /root/answer.txt\n")
    worker = WorkerProcess(jobs, tasks)
    workers.append(worker)
    response = httpx.post(
        f"{worker.url}/runs", json=run_payload(task_ids, agent=agent, num_instances=2), timeout=10
    )
    assert response.status_code == 201, response.text
    run_id = response.json()["run_id"]
    run_file = jobs / "runs" / run_id / "run.json"

    def going() -> bool:
        states = [t["state"] for t in stored(run_file)["trials"].values()]
        return "finished" in states and "running" in states

    assert _wait_until(going, 120), stored(run_file)
    return worker, run_id, run_file, task_ids


def _check_reported_is_stored(
    worker: WorkerProcess, run_id: str, run_file: Path, reported: dict[str, str]
) -> None:
    """What the API answers is on disk: status not terminal, each row stored as answered."""
    answer = worker.get(f"/runs/{run_id}")
    on_disk = stored(run_file)
    assert answer["status"] in ("queued", "running"), answer["status"]
    assert on_disk["status"] == answer["status"]
    stored_rows = {k: t["row"] for k, t in on_disk["trials"].items() if t["row"] is not None}
    for row in answer["rows"]:
        key = next(k for k, r in stored_rows.items() if r["trial_id"] == row["trial_id"])
        assert stored_rows[key] == row
        assert reported.setdefault(key, row["trial_id"]) == row["trial_id"]
    for key, state in answer["tasks"].items():
        if state == "finished":
            assert on_disk["trials"][key]["state"] == "finished"


def test_a_full_jobs_disk_pauses_the_run_and_a_restart_takes_nothing_back(
    tmp_path: Path, small_disk: Path, workers: list[WorkerProcess]
) -> None:
    """Filled mid-run: the run pauses (no trial is failed or scored for it, nothing reported
    that is not stored); killed while full, freed, restarted: it completes, and every row it
    reported keeps its trial id (one answer per trial)."""
    first, run_id, run_file, task_ids = _start_disk_run(tmp_path, small_disk, workers)
    filler = fill(small_disk)
    reported: dict[str, str] = {}
    assert _wait_until(lambda: _saw_full(first, run_id), 60), "the worker never saw the disk full"
    # Paused: the answers stay what the disk holds, while trials keep running into the full disk.
    checks = 0
    deadline = time.monotonic() + 8
    while time.monotonic() < deadline or checks < 5:
        _check_reported_is_stored(first, run_id, run_file, reported)
        checks += 1
        time.sleep(0.2)
    first.kill()
    filler.unlink()

    second = WorkerProcess(small_disk, tmp_path / "tasks")
    workers.append(second)
    assert _wait_until(lambda: second.get(f"/runs/{run_id}")["status"] == "completed", 240)
    status = second.get(f"/runs/{run_id}")
    rows = status["rows"]
    assert len(rows) == 8 and len({row["trial_id"] for row in rows}) == 8
    assert all(row["passed"] for row in rows), rows  # the disk's failure scored nobody
    after = finished_document(run_file)
    for key, trial_id in reported.items():
        assert after["trials"][key]["row"]["trial_id"] == trial_id, key
    assert sorted(after["trials"]) == sorted(f"{t}#{i}" for t in task_ids for i in range(2))


def test_a_transient_full_jobs_disk_does_not_fail_the_run(
    tmp_path: Path, small_disk: Path, workers: list[WorkerProcess]
) -> None:
    """Filled mid-run and freed: the same worker resumes by itself and every trial passes; an
    attempt that met the full disk is recorded as the disk's (``jobs_disk_full``), never
    counted against the agent."""
    worker, run_id, run_file, _ = _start_disk_run(tmp_path, small_disk, workers)
    filler = fill(small_disk)
    reported: dict[str, str] = {}
    assert _wait_until(lambda: _saw_full(worker, run_id), 60), "never saw the disk full"
    _check_reported_is_stored(worker, run_id, run_file, reported)
    filler.unlink()
    assert _wait_until(lambda: _log_says(worker, "takes writes again"), 60)
    assert _wait_until(lambda: worker.get(f"/runs/{run_id}")["status"] != "running", 240)
    status = worker.get(f"/runs/{run_id}")
    assert status["status"] == "completed", status
    assert len(status["rows"]) == 8 and all(row["passed"] for row in status["rows"]), status
    after = finished_document(run_file)
    for key, trial_id in reported.items():
        assert after["trials"][key]["row"]["trial_id"] == trial_id
    failures = {a["failure"] for t in after["trials"].values() for a in t["attempts"]}
    assert failures <= {None, "jobs_disk_full"}, failures


def test_a_journal_line_cut_by_a_full_disk_is_taken_back(small_disk: Path) -> None:
    """A line the full disk cut short is removed again, so the next line after space returns
    is not glued to a torn one (a reader would skip both)."""
    journal = small_disk / "journal.jsonl"
    append_line(journal, b'{"seq":1}\n')
    filler = fill(small_disk)
    os.truncate(filler, filler.stat().st_size - 16384)  # room for part of the next line only
    big = b'{"seq":2,"pad":"' + b"x" * (1 << 20) + b'"}\n'
    with pytest.raises(OSError) as failed:
        append_line(journal, big)
    assert failed.value.errno == errno.ENOSPC
    assert journal.read_bytes() == b'{"seq":1}\n'
    filler.unlink()
    append_line(journal, b'{"seq":3}\n')
    assert journal.read_bytes().splitlines() == [b'{"seq":1}', b'{"seq":3}']


@pytest.mark.docker
def test_a_restart_keeps_the_task_images_runs_built(
    tmp_path: Path, workers: list[WorkerProcess], docker_client: Any
) -> None:
    """A task image is a cache tagged by its build context: built by one run, used by the next.
    A restart keeps the image a finished run built, which an unfinished run still needs (its
    trial of that task was queued when the worker was killed), and the run finishes on it."""
    from tests.support.docker_images import ensure_test_image

    ensure_test_image(docker_client, "python")
    tasks, jobs = tmp_path / "tasks", tmp_path / "jobs"
    tasks.mkdir()
    nonce = uuid.uuid4().hex
    base = f"FROM python:3.11-slim\nWORKDIR /root\nENV NONCE={nonce}\n"
    make_task(tasks, "cached", dockerfile=base)
    for name in ("slow-a", "slow-b"):  # they hold both of the worker's two slots
        make_task(tasks, name, dockerfile=f"{base}RUN touch /etc/{name}\n")
    marker = f"6.{int(time.time() * 1000) % 100000:05d}"
    agent = script(
        tmp_path, "slow", f"if [ -e /etc/slow-a ] || [ -e /etc/slow-b ]; then sleep {marker}; fi\n"
        "echo 42 > /root/answer.txt\n",
    )  # fmt: skip
    try:
        first = WorkerProcess(jobs, tasks, "docker")
        workers.append(first)
        earlier = httpx.post(
            f"{first.url}/runs", json=run_payload(["cached"], agent=agent), timeout=10
        ).json()["run_id"]
        assert _wait_until(lambda: first.get(f"/runs/{earlier}")["status"] == "completed", 240)
        (image,) = docker_client.images.list(
            filters={"label": ["skillsbench.built=true", f"skillsbench.run={earlier}"]}
        )
        response = httpx.post(
            f"{first.url}/runs", json=run_payload(["slow-a", "slow-b", "cached"], agent=agent),
            timeout=10,
        )  # fmt: skip
        run_id = response.json()["run_id"]
        run_file = jobs / "runs" / run_id / "run.json"

        def both_slow_running() -> bool:
            states = {k: t["state"] for k, t in stored(run_file)["trials"].items()}
            return (
                states["cached#0"] == "queued"
                and len(process_cmdlines_containing(f"sleep {marker}")) == 2
            )

        assert _wait_until(both_slow_running, 240), stored(run_file)["trials"]
        first.kill()

        second = WorkerProcess(jobs, tasks, "docker")  # its start reaps what the kill left
        workers.append(second)
        assert _wait_until(lambda: second.get(f"/runs/{run_id}")["status"] == "completed", 240)
        docker_client.images.get(image.id)  # kept: the same image, not a new build
        rows = second.get(f"/runs/{run_id}")["rows"]
        assert len(rows) == 3 and all(row["passed"] for row in rows), rows
        assert not docker_client.containers.list(
            all=True, filters={"label": [f"skillsbench.run={run_id}"]}
        )  # what the killed worker's containers left was reaped
    finally:
        for found in docker_client.images.list(filters={"label": ["skillsbench.built=true"]}):
            if any(nonce in env for env in found.attrs["Config"].get("Env") or []):
                docker_client.images.remove(found.id, force=True)
