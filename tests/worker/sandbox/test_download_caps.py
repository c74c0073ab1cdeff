"""``download`` through a :class:`CopyBudget`, on every backend: files a participant wrote under
``/logs`` reach the host only up to the caps, and a sparse file is never expanded."""

from __future__ import annotations

from pathlib import Path

from worker.core.capped import CopyBudget
from worker.sandbox import Sandbox


def disk_usage(root: Path) -> int:
    """Real bytes on disk under ``root`` (allocated blocks, each inode once)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for path in [root, *root.rglob("*")]:
        info = path.lstat()
        if (info.st_dev, info.st_ino) not in seen:
            seen.add((info.st_dev, info.st_ino))
            total += info.st_blocks * 512
    return total


async def test_sparse_and_large_files_are_capped(sandbox: Sandbox, tmp_path: Path) -> None:
    await sandbox.exec(
        "truncate -s 64M /logs/agent/a-sparse.bin"
        " && head -c 3000 /dev/zero | tr '\\0' a > /logs/agent/b-small.txt"
        " && mkdir -p /logs/agent/z-many && for i in $(seq 1 40); do echo $i > /logs/agent/z-many/$i;"
        " done"
    )
    budget = CopyBudget(file_bytes=64 << 10, total_bytes=256 << 10, max_entries=20)
    out = tmp_path / "agent"  # names sort so that both backends meet the two files first
    await sandbox.download("/logs/agent", out, budget=budget)

    assert disk_usage(out) <= (256 << 10) + 64 * 4096  # the bytes cap, plus folder/inode blocks
    kept = (out / "a-sparse.bin").read_bytes()
    assert len(kept) <= 64 << 10
    assert kept.endswith(b"more bytes of 67108864 dropped]\n")
    assert (out / "b-small.txt").read_text() == "a" * 3000
    report = budget.report()
    assert [t["path"] for t in report["truncated"]] == ["/logs/agent/a-sparse.bin"]
    assert report["n_skipped"] > 0 and report["files_and_folders"] == 20
    assert all("more than 20" in s["reason"] for s in report["skipped"])
    assert len([p for p in out.rglob("*")]) == 20


async def test_default_budget_caps_a_1gib_sparse_file(sandbox: Sandbox, tmp_path: Path) -> None:
    await sandbox.exec(
        "truncate -s 1G /logs/verifier/huge.log && echo 1 > /logs/verifier/0-reward.txt"
    )
    out = tmp_path / "verifier"
    budget = CopyBudget.default()
    await sandbox.download("/logs/verifier", out, budget=budget)
    assert disk_usage(out) <= budget.file_bytes + 4 * 4096
    assert (out / "0-reward.txt").read_text() == "1\n"
    assert budget.report()["n_truncated"] == 1
