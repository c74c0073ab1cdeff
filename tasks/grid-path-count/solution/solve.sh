#!/bin/sh
# Oracle: dynamic programming over (cell, last step was diagonal).
set -eu
python3 - <<'PY'
grid = [line.rstrip("\n") for line in open("/root/grid.txt") if line.strip()]
rows, cols = len(grid), len(grid[0])
# ways[r][c] = (paths ending here with a non-diagonal last step, ... with a diagonal last step)
ways = [[[0, 0] for _ in range(cols)] for _ in range(rows)]
ways[0][0][0] = 1
for r in range(rows):
    for c in range(cols):
        if grid[r][c] == "#" or (r, c) == (0, 0):
            continue
        straight = 0
        if r > 0:
            straight += sum(ways[r - 1][c])
        if c > 0:
            straight += sum(ways[r][c - 1])
        diagonal = ways[r - 1][c - 1][0] if r > 0 and c > 0 else 0
        ways[r][c] = [straight, diagonal]
with open("/root/answer.txt", "w") as f:
    f.write(f"{sum(ways[rows - 1][cols - 1])}\n")
PY
