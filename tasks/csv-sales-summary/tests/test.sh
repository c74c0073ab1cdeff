#!/bin/sh
# Grades /root/summary.json against the verifier's own copy of the data; reward 1 or 0.
mkdir -p /logs/verifier
if python3 -I /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
exit 0
