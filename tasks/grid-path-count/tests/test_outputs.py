"""Counts the paths with a memoised search over (cell, last step) and compares exactly."""

import functools
import sys

GRID = [line.rstrip("\n") for line in open("/tests/grid.txt") if line.strip()]
ROWS, COLS = len(GRID), len(GRID[0])
STEPS = {"right": (0, 1), "down": (1, 0), "diagonal": (1, 1)}


@functools.lru_cache(maxsize=None)
def paths_from(r, c, last):
    if (r, c) == (ROWS - 1, COLS - 1):
        return 1
    total = 0
    for name, (dr, dc) in STEPS.items():
        if name == "diagonal" and last == "diagonal":
            continue
        nr, nc = r + dr, c + dc
        if nr < ROWS and nc < COLS and GRID[nr][nc] == ".":
            total += paths_from(nr, nc, name)
    return total


def main():
    try:
        text = open("/root/answer.txt").read().strip()
    except OSError as exc:
        print("FAIL: cannot read /root/answer.txt:", exc)
        return 1
    if not text.isdigit():
        print(f"FAIL: not a base-10 integer: {text[:80]!r}")
        return 1
    want = paths_from(0, 0, None)
    if int(text) != want:
        print(f"FAIL: {text}, expected {want}")
        return 1
    print(f"PASS: {want}")
    return 0


sys.exit(main())
