#!/bin/sh
# Oracle: follow the amortization-schedules skill (decimal, half-up cents, final payment, TOTAL row).
set -eu
python3 - <<'PY'
import json
from decimal import ROUND_HALF_UP, Decimal

cent = Decimal("0.01")
loan = json.load(open("/root/loan.json"), parse_float=Decimal)
balance = Decimal(loan["principal"]).quantize(cent)
months = int(loan["months"])
r = Decimal(loan["annual_rate_percent"]) / 100 / 12
payment = (balance * r / (1 - (1 + r) ** -months)).quantize(cent, ROUND_HALF_UP)
rows, sums = [], [Decimal(0)] * 3
for period in range(1, months + 1):
    interest = (balance * r).quantize(cent, ROUND_HALF_UP)
    pay = balance + interest if period == months else payment
    principal = pay - interest
    balance -= principal
    sums = [sums[0] + pay, sums[1] + interest, sums[2] + principal]
    rows.append(f"{period},{pay:.2f},{interest:.2f},{principal:.2f},{balance:.2f}")
rows.append(f"TOTAL,{sums[0]:.2f},{sums[1]:.2f},{sums[2]:.2f},0.00")
with open("/root/schedule.csv", "w") as f:
    f.write("period,payment,interest,principal,balance\n" + "\n".join(rows) + "\n")
PY
