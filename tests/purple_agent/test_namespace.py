"""The CLI's mount namespace stays within bubblewrap's limits however crowded the host is."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from purple_agent.namespace import bwrap_problem, find_bwrap, root_args

BWRAP_MAX_ARGS = 9000  # bubblewrap's own limit (MAX_ARGS in bubblewrap.c)


def _crowded(tmp_path: Path, count: int = 4000) -> tuple[Path, list[str]]:
    """A folder like Docker's layer store: thousands of entries, one holding a mount point."""
    store = tmp_path / "layers"
    store.mkdir()
    for i in range(count):
        (store / f"layer{i:05d}").mkdir()
    (store / "layer00007" / "merged").mkdir()
    return store, [str(store / "layer00007" / "merged")]


def test_a_crowded_folder_with_a_nested_mount_stays_under_the_argument_limit(
    tmp_path: Path,
) -> None:
    store, mounts = _crowded(tmp_path)
    home = store / "layer03999" / "home"
    home.mkdir()
    args = root_args([], needed=[str(home)], mounts=mounts)
    assert len(args) < BWRAP_MAX_ARGS // 2, len(args)
    shown = {a for a in args if a.startswith(str(store) + "/")}
    assert str(home) in shown or str(store / "layer03999") in shown, sorted(shown)[:5]
    assert str(store / "layer00001") not in shown  # the crowd itself is left out
    assert mounts[0] not in shown  # a nested mount point is never bound


def test_a_small_folder_with_a_nested_mount_is_rebuilt_whole(tmp_path: Path) -> None:
    store, mounts = _crowded(tmp_path, count=20)
    # needed: the way to the store (pytest's own folders above it may hold hundreds of entries)
    args = root_args([], needed=[str(store)], mounts=mounts)
    shown = {a for a in args if a.startswith(str(store) + "/")}
    assert {str(store / f"layer{i:05d}") for i in range(20) if i != 7} <= shown
    assert mounts[0] not in shown


def test_the_cli_sees_its_home_and_workspace_beside_a_crowded_folder(tmp_path: Path) -> None:
    bwrap = find_bwrap(os.environ)
    problem = bwrap_problem(bwrap)
    if problem is not None or bwrap is None:
        pytest.skip(problem or "no bwrap")
    store, mounts = _crowded(tmp_path)
    home = store / "layer02000"
    (home / "config").write_text("the CLI's settings\n")
    work = tmp_path / "copy"
    work.mkdir()
    (work / "data.csv").write_text("a,b\n")
    target = str(tmp_path / "task-root")  # absent on the host: made as a mount point
    script = f"cat {home}/config; ls {target}; ls {store} | wc -l"
    # the real root plus a synthetic mount table: the folder is rebuilt as under Docker
    args = root_args([target], needed=[str(home)], mounts=mounts)
    assert len(args) < BWRAP_MAX_ARGS // 2
    full = [
        bwrap,
        *args,
        "--bind",
        str(work),
        target,
        "--chdir",
        target,
        "--",
        "/bin/sh",
        "-c",
        script,
    ]
    done = subprocess.run(full, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "the CLI's settings"
    assert "data.csv" in lines
    assert int(lines[-1]) < 10  # the crowd is hidden, not rebuilt entry by entry
    assert not (tmp_path / "task-root").exists()  # nothing made on the host
