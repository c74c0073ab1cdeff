# shellcheck shell=sh
# After tests.sh. Arguments: the tests folder, the verifier logs folder.
run_tests "$@"
