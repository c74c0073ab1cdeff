# shellcheck shell=sh
# Runs after canonical.sh. Arguments: $1 what to do with the path once allowed: "print" it,
# "read" it (cat) or "write" stdin into it (parents made); $2 the path; $3... the allowed roots
# (none: any path). Exit 3 when the path resolves outside every root, 4 when it cannot resolve.
mode=$1
p=$(canon "$2" && printf x) || exit 4
p=${p%x}
shift 2
allowed() {
  case $mode in
    read) exec cat -- "$p" ;;
    write) d=${p%/*}; mkdir -p -- "${d:-/}" && cat > "$p"; exit $? ;;
    *) printf '%s' "$p"; exit 0 ;;
  esac
}
[ "$#" -eq 0 ] && allowed
for root in "$@"; do
  r=$(canon "$root" && printf x) || continue
  r=${r%x}
  case "$p" in "$r"|"$r"/*) allowed ;; esac
done
exit 3
