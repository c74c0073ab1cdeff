"""Checks /root/summary.json; exits non-zero on the first wrong value."""

import csv
import json
import sys


def expected():
    totals = {}
    with open("/tests/sales.csv", newline="") as f:
        for row in csv.DictReader(f):
            totals[row["region"]] = totals.get(row["region"], 0.0) + int(row["units"]) * float(
                row["unit_price"]
            )
    return totals


def fail(message):
    print("FAIL:", message)
    sys.exit(1)


def main():
    try:
        with open("/root/summary.json") as f:
            summary = json.load(f)
    except (OSError, ValueError) as exc:
        fail(f"cannot read /root/summary.json: {exc}")
    if not isinstance(summary, dict):
        fail("summary.json is not a JSON object")
    if set(summary) != {"total_revenue", "revenue_by_region", "top_region"}:
        fail(f"unexpected keys {sorted(summary)}")
    totals = expected()
    by_region = summary["revenue_by_region"]
    if not isinstance(by_region, dict) or set(by_region) != set(totals):
        fail(f"revenue_by_region must name exactly {sorted(totals)}")
    for region, value in totals.items():
        got = by_region[region]
        if isinstance(got, bool) or not isinstance(got, (int, float)) or abs(got - value) > 0.011:
            fail(f"revenue of {region}: expected {value:.2f}, got {got!r}")
    total = summary["total_revenue"]
    if isinstance(total, bool) or not isinstance(total, (int, float)):
        fail("total_revenue is not a number")
    if abs(total - sum(totals.values())) > 0.011:
        fail(f"total_revenue: expected {sum(totals.values()):.2f}, got {total!r}")
    if summary["top_region"] != max(totals, key=totals.get):
        fail(f"top_region: got {summary['top_region']!r}")
    print("PASS")


main()
