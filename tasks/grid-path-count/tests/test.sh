#!/bin/sh
# Compares /root/answer.txt with a brute-force-checked count for the verifier's copy of the grid.
mkdir -p /logs/verifier
if python3 -I /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
exit 0
