# shellcheck shell=sh
# Runs after kill_all.sh (and limits.sh's function) in the same shell: every process of the
# agent is dead now. Say so, with how often the container hit its limits; the host then checks
# the limits and looks at the container (tampering) before it sends the stdin stage.sh reads.
printf 'skillsbench-killed '
limit_counts
