"""Interval utilities used by the scheduling service."""


def merge_intervals(intervals):
    """Merge overlapping closed intervals; see the contract in the task description."""
    result = []
    for start, end in intervals:
        if result and start < result[-1][1]:
            result[-1][1] = end
        else:
            result.append([start, end])
    return result
