"""The answer must be within 0.5% of the least-squares half-life of the verifier's own data."""

import csv
import math
import sys


def fitted_half_life():
    with open("/tests/measurements.csv", newline="") as f:
        rows = [(float(r["hours"]), math.log(float(r["counts_per_minute"]))) for r in csv.DictReader(f)]
    n = len(rows)
    mt = sum(t for t, _ in rows) / n
    my = sum(y for _, y in rows) / n
    slope = sum((t - mt) * (y - my) for t, y in rows) / sum((t - mt) ** 2 for t, _ in rows)
    return math.log(2) / -slope


def main():
    try:
        text = open("/root/half_life.txt").read().strip()
    except OSError as exc:
        print("FAIL: cannot read /root/half_life.txt:", exc)
        return 1
    try:
        answer = float(text)
    except ValueError:
        print(f"FAIL: not a single number: {text[:80]!r}")
        return 1
    want = fitted_half_life()
    if not math.isfinite(answer) or abs(answer - want) > 0.005 * want:
        print(f"FAIL: half-life {answer} h, expected {want:.4f} h (+/- 0.5%)")
        return 1
    print(f"PASS: {answer} h (fit {want:.4f} h)")
    return 0


sys.exit(main())
