"""Hidden checks for merge_intervals: fixed cases plus seeded random ones against a reference."""

import copy
import importlib.util
import random
import sys


def load():
    spec = importlib.util.spec_from_file_location("intervals_under_test", "/app/intervals.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.merge_intervals


def reference(intervals):
    points = sorted((s, e) for s, e in intervals)
    out = []
    for s, e in points:
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


CASES = [
    [],
    [[1, 3]],
    [[1, 3], [3, 5]],
    [[5, 8], [1, 2]],
    [[1, 10], [2, 3], [4, 5]],
    [[6, 7], [1, 4], [2, 5], [9, 9]],
    [[-5, -1], [-2, 0], [10, 12]],
    [[0, 0], [0, 0]],
]


def main():
    try:
        merge = load()
    except Exception as exc:  # a broken module is a failed task, not a verifier error
        print("FAIL: cannot import /app/intervals.py:", exc)
        return 1
    rng = random.Random(20260303)
    cases = list(CASES)
    for _ in range(300):
        n = rng.randint(0, 12)
        cases.append(
            [[s, s + rng.randint(0, 6)] for s in (rng.randint(-20, 40) for _ in range(n))]
        )
    for case in cases:
        original = copy.deepcopy(case)
        try:
            got = merge(case)
        except Exception as exc:
            print(f"FAIL: {original} raised {exc!r}")
            return 1
        if case != original:
            print(f"FAIL: input was modified: {original} -> {case}")
            return 1
        if not isinstance(got, list) or [list(p) for p in got] != reference(original):
            print(f"FAIL: merge_intervals({original}) = {got!r}, expected {reference(original)}")
            return 1
    print(f"PASS ({len(cases)} cases)")
    return 0


sys.exit(main())
