#!/bin/sh
# BenchFlow's published package in a test-only environment (published-env.sh):
#   tests/worker/trial_record/benchflow-env.sh [DIR]   (DIR/bin/bench is BenchFlow's CLI)
exec sh "$(dirname "$0")/published-env.sh" benchflow "${BENCHFLOW_VERSION:-0.7.11}" bench "$@"
