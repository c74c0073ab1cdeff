"""The workspace copy the agent under test makes with nothing but exec actions, run for real by
``sh`` on this host, with GNU tar and with a tar that has no ``-T`` (as some busybox builds)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from purple_agent.seeding import FolderFetch
from worker.bridge.protocol import ActionResult

NO_T_TAR = """#!/bin/sh
for a in "$@"; do case "$a" in -T|-T*) echo "tar: invalid option -- 'T'" >&2; exit 1;; esac; done
exec {real} "$@"
"""


def fetch(remote: Path, local: Path, env: dict[str, str]) -> FolderFetch:
    copy = FolderFetch("workspace", str(remote), local, chunk=600, max_chunks=50)
    while not copy.done:
        action = copy.next_action()
        done = subprocess.run(
            ["sh", "-c", action.command], capture_output=True, text=True, env=env, check=False
        )
        copy.feed(ActionResult(exit_code=done.returncode, stdout=done.stdout, stderr=done.stderr))
    copy.unpack()
    return copy


@pytest.mark.parametrize("tar", ["gnu", "without -T"])
def test_folder_copy_round_trips(tmp_path: Path, tar: str) -> None:
    env = dict(os.environ)
    if tar != "gnu":
        bindir = tmp_path / "bin"
        bindir.mkdir()
        (bindir / "tar").write_text(NO_T_TAR.format(real=shutil.which("tar")))
        (bindir / "tar").chmod(0o755)
        env["PATH"] = f"{bindir}:{env['PATH']}"
    remote = tmp_path / "remote"
    (remote / "data" / "deep").mkdir(parents=True)
    (remote / "sales.csv").write_text("region,units\nnorth,3\n")
    (remote / "data" / "deep" / "with space.txt").write_text("spaced\n")
    (remote / "data" / "star*.txt").write_text("glob\n")
    (remote / "data" / "random.bin").write_bytes(os.urandom(3000))  # several chunks
    (remote / ".cache").mkdir()
    (remote / ".cache" / "skip.txt").write_text("pruned\n")
    copy = fetch(remote, tmp_path / "local", env)
    assert copy.note is None
    got = sorted(
        p.relative_to(tmp_path / "local").as_posix() for p in copy.local.rglob("*") if p.is_file()
    )
    assert got == ["data/deep/with space.txt", "data/random.bin", "data/star*.txt", "sales.csv"]
    for name in got:
        assert (copy.local / name).read_bytes() == (remote / name).read_bytes()
    assert not list(Path("/tmp").glob(f"{Path(copy._archive).name}*"))  # archive and list removed


def test_an_empty_folder_copies_as_nothing(tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    copy = fetch(remote, tmp_path / "local", dict(os.environ))
    assert copy.note is None and copy.local.is_dir() and not any(copy.local.iterdir())
    assert not list(Path("/tmp").glob(f"{Path(copy._archive).name}*"))
