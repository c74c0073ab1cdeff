"""The sandbox-side path resolution of ACP file actions: without ``realpath -m`` (busybox) the
plain-sh walk must resolve exactly as coreutils does, or a planted symlink could redirect a write."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from worker.acp.sandbox_fs import CANONICAL, RESOLVE

NO_M_REALPATH = """#!/bin/sh
for a in "$@"; do [ "$a" = -m ] && { echo "realpath: unrecognized option: m" >&2; exit 1; }; done
exec {real} "$@"
"""


def canon(path: str, cwd: Path, env: dict[str, str]) -> str:
    done = subprocess.run(
        ["sh", "-c", CANONICAL + 'canon "$1"', "sh", path],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.rstrip("\n")


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "real" / "deep").mkdir(parents=True)
    (root / "real" / "file.txt").write_text("x")
    (root / "link-dir").symlink_to("real")
    (root / "abs-link").symlink_to("/etc")
    (root / "escape").symlink_to("../..")
    (root / "to-file").symlink_to("real/file.txt")
    (root / "dangling").symlink_to("/nonexistent/target")
    (root / "chain").symlink_to("link-dir/deep")
    (root / "loop-a").symlink_to("loop-b")
    (root / "loop-b").symlink_to("loop-a")
    return root


PATHS = [
    ".",
    "real/file.txt",
    "link-dir/deep/new.txt",
    "link-dir/../real",
    "abs-link/passwd",
    "escape/outside.txt",
    "to-file",
    "dangling",
    "dangling/more/../x",
    "chain/../file.txt",
    "missing/../real//./deep/",
    "missing/a/../../link-dir",
    "/",
    "//tmp/../etc",
]


def test_the_walk_resolves_as_realpath_m_does(tree: Path, tmp_path: Path) -> None:
    real = shutil.which("realpath")
    assert real is not None
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "realpath").write_text(NO_M_REALPATH.replace("{real}", real))
    (bindir / "realpath").chmod(0o755)
    gnu = dict(os.environ)
    without_m = {**gnu, "PATH": f"{bindir}:{gnu['PATH']}"}
    for path in [*PATHS, str(tree / "link-dir" / "deep")]:
        expected = subprocess.run(
            [real, "-m", "--", path], cwd=tree, capture_output=True, text=True, check=True
        ).stdout.rstrip("\n")
        assert canon(path, tree, without_m) == expected, path
        assert canon(path, tree, gnu) == expected, path


def test_a_symlink_loop_is_an_error_not_a_hang(tree: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        ["sh", "-c", CANONICAL + 'realpath() { return 1; }; canon "$1"', "sh", "loop-a/x"],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode != 0


@pytest.mark.parametrize("realpath_m", [True, False], ids=["realpath-m", "walk"])
@pytest.mark.parametrize(
    ("link", "target", "asked"),
    [
        ("f", "{out}/pwned", "f\n"),  # the name asked for ends in a newline
        ("a", "f\n", "a"),  # a planted link's target ends in a newline
    ],
    ids=["trailing-newline-name", "trailing-newline-target"],
)
def test_a_trailing_newline_does_not_redirect_a_write(
    tmp_path: Path, realpath_m: bool, link: str, target: str, asked: str
) -> None:
    """Command substitution drops trailing newlines: the path checked must be the path written."""
    ws, out = tmp_path / "ws", tmp_path / "out"
    ws.mkdir()
    out.mkdir()
    (ws / "f").symlink_to(out / "pwned")
    if link != "f":
        (ws / link).symlink_to(target.replace("{out}", str(out)))
    env = dict(os.environ)
    if not realpath_m:
        real = shutil.which("realpath")
        assert real is not None
        (tmp_path / "bin").mkdir()
        (tmp_path / "bin" / "realpath").write_text(NO_M_REALPATH.replace("{real}", real))
        (tmp_path / "bin" / "realpath").chmod(0o755)
        env["PATH"] = f"{tmp_path / 'bin'}:{env['PATH']}"
    done = subprocess.run(
        ["sh", "-c", RESOLVE, "sh", "write", str(ws / asked), str(ws)],
        input=b"pwned",
        env=env,
        capture_output=True,
        check=False,
    )
    assert not (out / "pwned").exists(), done
    if done.returncode == 0:  # written: then under its own name, inside the workspace
        assert (ws / asked).read_bytes() == b"pwned"
