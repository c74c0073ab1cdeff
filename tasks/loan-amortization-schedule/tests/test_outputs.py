"""Rebuilds the expected schedule from the verifier's own loan terms and compares cell by cell."""

import sys
from decimal import ROUND_HALF_UP, Decimal

PRINCIPAL, RATE_PERCENT, MONTHS = Decimal("18500.00"), Decimal("7.25"), 24
HEADER = ["period", "payment", "interest", "principal", "balance"]


def expected_rows():
    cent = Decimal("0.01")
    r = RATE_PERCENT / 100 / 12
    balance = PRINCIPAL
    payment = (balance * r / (1 - (1 + r) ** -MONTHS)).quantize(cent, ROUND_HALF_UP)
    rows, totals = [], [Decimal(0)] * 3
    for period in range(1, MONTHS + 1):
        interest = (balance * r).quantize(cent, ROUND_HALF_UP)
        pay = balance + interest if period == MONTHS else payment
        principal = pay - interest
        balance -= principal
        totals = [totals[0] + pay, totals[1] + interest, totals[2] + principal]
        rows.append([str(period), f"{pay:.2f}", f"{interest:.2f}", f"{principal:.2f}", f"{balance:.2f}"])
    rows.append(["TOTAL", *(f"{t:.2f}" for t in totals), "0.00"])
    return rows


def main():
    try:
        text = open("/root/schedule.csv", newline="").read()
    except OSError as exc:
        print("FAIL: cannot read /root/schedule.csv:", exc)
        return 1
    lines = text.replace("\r\n", "\n").rstrip("\n").split("\n")
    if lines[0].strip() != ",".join(HEADER):
        print(f"FAIL: header is {lines[0]!r}")
        return 1
    got = [[cell.strip() for cell in line.split(",")] for line in lines[1:]]
    want = expected_rows()
    if len(got) != len(want):
        print(f"FAIL: {len(got)} rows after the header, expected {len(want)} (24 periods + TOTAL)")
        return 1
    for i, (g, w) in enumerate(zip(got, want), start=2):
        if g != w:
            print(f"FAIL: line {i}: {','.join(g)!r}, expected {','.join(w)!r}")
            return 1
    print("PASS")
    return 0


sys.exit(main())
