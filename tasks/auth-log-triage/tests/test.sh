#!/bin/sh
# Grades each key of /root/report.json; writes /logs/verifier/reward.json with partial credit.
mkdir -p /logs/verifier
if ! python3 -I /tests/test_outputs.py; then
  echo "grader crashed" >&2
  echo '{"reward": 0.0}' > /logs/verifier/reward.json
fi
exit 0
