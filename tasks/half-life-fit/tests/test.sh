#!/bin/sh
# Compares /root/half_life.txt with the fit of the verifier's copy of the data (0.5% tolerance).
mkdir -p /logs/verifier
if python3 -I /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
exit 0
