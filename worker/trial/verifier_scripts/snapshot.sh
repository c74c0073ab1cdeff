# shellcheck shell=sh
# After plantables.sh. Before the agent runs: the signatures of the plantable files that
# legitimately exist, sorted. Arguments: the folders searched recursively.
sigs "$@" | sort
