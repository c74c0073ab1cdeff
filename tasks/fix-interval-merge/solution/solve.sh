#!/bin/sh
# Oracle: replace the buggy implementation with a sort-then-sweep merge.
set -eu
cat > /app/intervals.py <<'PY'
"""Interval utilities used by the scheduling service."""


def merge_intervals(intervals):
    """Merge overlapping or touching closed intervals into a new sorted list."""
    merged = []
    for start, end in sorted((pair[0], pair[1]) for pair in intervals):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged
PY
