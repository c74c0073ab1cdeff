#!/bin/sh
# Compares /root/schedule.csv with the schedule the skill's conventions give; reward 1 or 0.
mkdir -p /logs/verifier
if python3 -I /tests/test_outputs.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
exit 0
