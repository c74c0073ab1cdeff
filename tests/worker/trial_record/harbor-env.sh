#!/bin/sh
# Harbor's published package in a test-only environment (published-env.sh):
#   tests/worker/trial_record/harbor-env.sh [DIR]   (DIR/bin/harbor is Harbor's CLI)
exec sh "$(dirname "$0")/published-env.sh" harbor "${HARBOR_VERSION:-0.25.0}" harbor "$@"
