"""Lexical containment of purple-agent paths (the symlink half is checked in the sandbox, see
test_a2a_bridge)."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from worker.bridge.paths import PathRefused, resolve

ROOTS = ["/root", "/tmp"]


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("answer.txt", "/root/answer.txt"),
        ("./out/a.txt", "/root/out/a.txt"),
        ("/root/x", "/root/x"),
        ("/root", "/root"),
        ("/tmp/scratch", "/tmp/scratch"),
        ("out//b.txt", "/root/out/b.txt"),
    ],
)
def test_inside(path: str, expected: str) -> None:
    assert resolve(path, "/root", ROOTS) == expected


@pytest.mark.parametrize(
    "path",
    ["", "../etc/passwd", "a/../../x", "/etc/passwd", "/rootkit/x", "/", "a\x00b", "/root/.."],
)
def test_refused(path: str) -> None:
    with pytest.raises(PathRefused):
        resolve(path, "/root", ROOTS)


@given(
    st.lists(st.sampled_from(["a", "..", ".", "", "root", "tmp", "etc", "rootx"]), max_size=6),
    st.booleans(),
)
def test_never_leaves_the_roots(parts: list[str], absolute: bool) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    try:
        got = resolve(path, "/root", ROOTS)
    except PathRefused:
        return
    assert got == posixpath.normpath(got)
    assert any(got == r or got.startswith(r + "/") for r in ROOTS)
