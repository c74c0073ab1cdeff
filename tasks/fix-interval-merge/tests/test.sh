#!/bin/sh
# Runs the hidden checks against /app/intervals.py; reward 1 only if all pass.
mkdir -p /logs/verifier
if python3 -I /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
exit 0
