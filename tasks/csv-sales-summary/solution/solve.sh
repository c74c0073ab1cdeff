#!/bin/sh
# Oracle: aggregate the CSV with the standard library.
set -eu
python3 - <<'PY'
import csv, json
totals = {}
with open("/root/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        revenue = int(row["units"]) * float(row["unit_price"])
        totals[row["region"]] = totals.get(row["region"], 0.0) + revenue
summary = {
    "total_revenue": round(sum(totals.values()), 2),
    "revenue_by_region": {k: round(v, 2) for k, v in sorted(totals.items())},
    "top_region": max(totals, key=totals.get),
}
with open("/root/summary.json", "w") as f:
    json.dump(summary, f, indent=2)
PY
