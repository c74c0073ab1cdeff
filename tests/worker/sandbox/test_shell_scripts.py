"""The shell scripts shipped as package data: found, and agreeing with the Python that reads
their output."""

from __future__ import annotations

from worker.acp.sandbox_fs import RESOLVE
from worker.sandbox._docker import sandbox as docker_sandbox
from worker.trial.verifier import NO_CHECKSUM, TEST_COMMAND, harden_command, snapshot_command


def test_the_markers_python_reads_are_the_ones_the_scripts_print() -> None:
    assert docker_sandbox._STAGE_FAILED in docker_sandbox._kill_upload_exec()
    assert NO_CHECKSUM in snapshot_command("/root", None)[2]
    assert NO_CHECKSUM in harden_command("/root", None)[2]


def test_values_travel_as_arguments_never_inside_the_script() -> None:
    odd = "/work dir/$(touch pwned)"
    argv = harden_command(odd, "/skills", then_test=True)
    assert odd not in argv[2] and "/skills" not in argv[2]
    assert argv[4:6] == ["test", odd] and argv[-1] == "/logs"
    assert snapshot_command(odd, None)[2] == snapshot_command("/root", None)[2]
    assert "canon()" in RESOLVE and TEST_COMMAND[3:] == ("sh", "/tests", "/logs/verifier")
