#!/bin/sh
# Reward 1 when /root/answer.txt holds exactly "42".
mkdir -p /logs/verifier
if [ "$(cat /root/answer.txt 2>/dev/null)" = "42" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
