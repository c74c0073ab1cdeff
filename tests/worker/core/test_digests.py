"""Content digests: two copies of a task share one, any change of content or shape makes another."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from worker.core.digests import content_digest


def _task(root: Path) -> Path:
    (root / "environment" / "data").mkdir(parents=True)
    (root / "environment" / "Dockerfile").write_text("FROM scratch\n")
    (root / "environment" / "data" / "input.csv").write_text("a,b\n1,2\n")
    (root / "task.toml").write_text("[environment]\n")
    return root


def test_copies_share_a_digest_and_edits_change_it(tmp_path: Path) -> None:
    one = _task(tmp_path / "one")
    two = tmp_path / "two"
    shutil.copytree(one, two, symlinks=True)
    first = content_digest(one / "task.toml", one / "environment")
    assert content_digest(two / "task.toml", two / "environment") == first
    assert content_digest(one / "task.toml", one / "environment") == first  # remembered

    (two / "environment" / "data" / "input.csv").write_text("a,b\n1,3\n")  # same size
    assert content_digest(two / "task.toml", two / "environment") != first
    (two / "environment" / "data" / "input.csv").write_text("a,b\n1,2\n")
    assert content_digest(two / "task.toml", two / "environment") == first

    (two / "environment" / "data" / "input.csv").chmod(0o755)
    assert content_digest(two / "task.toml", two / "environment") != first


def test_shape_counts_names_links_and_missing_parts(tmp_path: Path) -> None:
    task = _task(tmp_path / "t")
    base = content_digest(task / "task.toml", task / "environment", task / "tests")
    (task / "tests").mkdir()
    with_tests = content_digest(task / "task.toml", task / "environment", task / "tests")
    assert with_tests != base
    os.symlink("data/input.csv", task / "environment" / "link")
    linked = content_digest(task / "task.toml", task / "environment", task / "tests")
    assert linked != with_tests
    (task / "environment" / "link").unlink()
    os.symlink("data", task / "environment" / "link")
    assert content_digest(task / "task.toml", task / "environment", task / "tests") != linked
    # the same bytes under another name, or split over the two paths differently, differ
    renamed = _task(tmp_path / "r")
    (renamed / "environment" / "data" / "input.csv").rename(
        renamed / "environment" / "data" / "other.csv"
    )
    assert content_digest(renamed / "environment") != content_digest(
        _task(tmp_path / "s") / "environment"
    )
    assert content_digest(task / "task.toml", task / "environment") != content_digest(
        task / "environment", task / "task.toml"
    )
