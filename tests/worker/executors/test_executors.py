"""The executor seam without a cluster: the registry, the archives a node sends back, and how
Ray's exceptions map onto our failure table (the cluster tests are in test_ray.py)."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest

from worker.core.failures import FAILURE_TABLE, FailureKind
from worker.executors import ExecutorError, executor_names, make_executor
from worker.executors._ray_node import (
    NodeLostDuringTrial,
    NodeMismatch,
    pack_folder,
    project_identity,
    unpack_archive,
)
from worker.executors.inprocess import InProcessExecutor


def test_the_registry_knows_both_executors_and_names_an_unknown_one() -> None:
    assert executor_names() == ["inprocess", "ray"]
    assert isinstance(make_executor("inprocess"), InProcessExecutor)
    with pytest.raises(ValueError, match=r"unknown executor 'slurm' \(known: inprocess, ray\)"):
        make_executor("slurm")
    with pytest.raises(ValueError, match="takes no options"):
        make_executor("inprocess", {"address": "x"})
    with pytest.raises(ValueError, match="unknown option"):
        make_executor("ray", {"adress": "x"})


def test_node_lost_is_an_infrastructure_failure_that_is_retried() -> None:
    meaning = FAILURE_TABLE[FailureKind.NODE_LOST]
    assert meaning.retried and not meaning.score_eligible
    assert meaning.category == "worker_error"


def test_a_trial_folder_archive_is_bounded_and_keeps_the_documents_first(tmp_path: Path) -> None:
    folder = tmp_path / "trial"
    (folder / "verifier").mkdir(parents=True)
    (folder / "sandbox").mkdir()
    (folder / "result.json").write_text(json.dumps({"passed": True}))
    (folder / "verifier" / "reward.txt").write_text("1\n")
    (folder / "agent.log").write_bytes(b"x" * 5000)
    (folder / "sandbox" / "layer").write_bytes(b"y" * 10)
    data, report = pack_folder(folder, 1000, skip=frozenset({"sandbox"}))
    assert report["n_skipped_files"] == 1 and report["skipped_files"] == ["agent.log"]
    out = tmp_path / "out"
    unpack_archive(data, out, 1000)
    got = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert got == ["result.json", "verifier/reward.txt"]
    with pytest.raises(ValueError, match="larger than 10 bytes"):
        unpack_archive(data, tmp_path / "small", 10)


def test_an_archive_member_leaving_its_folder_or_a_link_is_not_written(tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        link = tarfile.TarInfo("link")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        tar.addfile(link)
        evil = tarfile.TarInfo("../evil")
        evil.size = 1
        tar.addfile(evil, io.BytesIO(b"x"))
    with pytest.raises(ValueError, match="leaves its folder"):
        unpack_archive(buffer.getvalue(), tmp_path / "out", 100)
    assert not (tmp_path / "evil").exists()
    assert not (tmp_path / "out" / "link").exists()


def test_the_project_identity_is_the_version_and_a_source_hash() -> None:
    version, digest = project_identity().split("+")
    assert version and len(digest) == 16


def test_ray_exceptions_map_onto_our_failure_table() -> None:
    rex = pytest.importorskip("ray.exceptions", reason="ray is not installed")
    from worker.executors._ray import ray_failure

    lost = [
        rex.WorkerCrashedError(),
        rex.NodeDiedError("the node died"),
        rex.ObjectLostError("ab" * 14, "", ""),
        rex.LocalRayletDiedError(),
    ]
    for exc in lost:
        kind, message = ray_failure(exc)
        assert kind is FailureKind.NODE_LOST, exc
        assert message.startswith(type(exc).__name__)
    ours = rex.RayTaskError("run_on_node", "Traceback ...", NodeMismatch("node 10.0.0.7 runs …"))
    assert ray_failure(ours) == (FailureKind.WORKER_ERROR, "node 10.0.0.7 runs …")
    going = NodeLostDuringTrial("the raylet of node 10.0.0.7 ended during the trial")
    gone = rex.RayTaskError("run_on_node", "Traceback ...", going)
    assert ray_failure(gone) == (FailureKind.NODE_LOST, str(going))
    bug = rex.RayTaskError("run_on_node", "Traceback ...", KeyError("x"))
    assert ray_failure(bug)[0] is FailureKind.WORKER_ERROR


async def test_the_ray_executor_without_a_cluster_address_does_not_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ray = pytest.importorskip("ray", reason="ray is not installed")
    if ray.is_initialized():
        pytest.skip("this process is connected to a cluster")
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ExecutorError, match=r"no cluster address \(--ray-address or RAY_ADDRESS\)"):
        await make_executor("ray").start()


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "worker"],
        ["skillsbench-agentbeats", "worker"],
    ],
    ids=["python -m worker", "skillsbench-agentbeats worker"],
)
def test_worker_with_a_ray_executor_that_cannot_start_is_one_error_line(
    tmp_path: Path, command: list[str]
) -> None:
    """No cluster address (or no ray package): one `error:` line on stderr, exit code 2, no
    uvicorn "startup failed" and no traceback (issue #18)."""
    import os
    import socket
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    if command[0] == "-m":
        argv = [sys.executable, *command]
    else:  # the console script beside this interpreter
        argv = [str(Path(sys.executable).parent / command[0]), *command[1:]]
    with socket.socket() as probe:  # a free port (the worker refuses 0)
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.run(
        [
            *argv,
            "--executor",
            "ray",
            "--port",
            str(port),
            "--jobs-dir",
            str(tmp_path / "jobs"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("error: executor ray: "), lines
    assert "no cluster address" in lines[0] or "not installed" in lines[0], lines
    assert "Traceback" not in proc.stderr and "startup failed" not in proc.stderr
