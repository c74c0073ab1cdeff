# shellcheck shell=sh
# Runs after kill_all.sh in the same shell: every process of the agent is dead now. Say so; the
# host then looks at the container (tampering) before it sends the stdin stage.sh reads.
echo skillsbench-killed
