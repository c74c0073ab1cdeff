#!/bin/sh
# Oracle: closed-form least squares on (t, ln counts).
set -eu
python3 - <<'PY'
import csv, math
with open("/root/measurements.csv", newline="") as f:
    rows = [(float(r["hours"]), math.log(float(r["counts_per_minute"]))) for r in csv.DictReader(f)]
n = len(rows)
mean_t = sum(t for t, _ in rows) / n
mean_y = sum(y for _, y in rows) / n
slope = sum((t - mean_t) * (y - mean_y) for t, y in rows) / sum((t - mean_t) ** 2 for t, _ in rows)
with open("/root/half_life.txt", "w") as f:
    f.write(f"{math.log(2) / -slope:.4f}\n")
PY
