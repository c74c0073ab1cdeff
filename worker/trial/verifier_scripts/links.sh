# shellcheck shell=sh
# On a regrade's fresh sandbox, right after the work product is laid (nothing of the agent's
# runs): its symbolic links (stdin, one path a line) become what they point at now. A link's
# meaning is decided when it is followed, and the verifier follows it after it made or copied
# files of its own (the ground truth it generates, the expected answer it copies from /tests):
# a link to where those will be, or one at where the verifier writes, would hand the agent the
# verifier's files. So the work product is content, not aliases:
# - a link to nothing (or a loop) is removed;
# - a link to a file becomes a copy of it (mode kept);
# - a link to a folder becomes a copy of it, its own links in turn the same;
# - a link to anything else (a FIFO, a device) is removed;
# a link to a folder above it is removed. Past $1 KiB of copies, or $2 links (those in copied
# folders too), it stops with exit 3: the regrade then gives no pass, and no agent makes it
# spend minutes on links. Exit 0 once every link was handled.
# Each says "skillsbench-link <copied|dangling|dropped|too-large> <path>" on stdout.
max_kib=$1
max_links=$2
used=0
n=0
over=
work=/tmp/.skillsbench-links.$$.a
next=/tmp/.skillsbench-links.$$.b
cat >"$work" || exit 1
while [ -s "$work" ]; do
  : >"$next" || exit 1
  while IFS= read -r p; do
    case $p in /?*) ;; *) continue ;; esac
    [ -L "$p" ] || continue
    n=$((n + 1))
    if [ ! -e "$p" ]; then
      rm -f -- "$p"
      echo "skillsbench-link dangling $p"
      continue
    fi
    if [ ! -f "$p" ] && [ ! -d "$p" ]; then
      rm -f -- "$p"
      echo "skillsbench-link dropped $p"
      continue
    fi
    size=$(du -sk -- "$p/." 2>/dev/null || du -sLk -- "$p" 2>/dev/null)
    size=${size%%[!0-9]*}
    used=$((used + ${size:-0}))
    if [ "$n" -gt "$max_links" ] || [ "$used" -gt "$max_kib" ]; then
      echo "skillsbench-link too-large $p"
      over=1
      break
    fi
    if [ -d "$p" ]; then
      # a folder holding the link itself would be copied into its own copy, without end
      real=$(readlink -f -- "$p")
      case $p/ in "${real%/}"/*)
        rm -f -- "$p"
        echo "skillsbench-link dropped $p"
        continue
        ;;
      esac
    fi
    copy="$p.skillsbench-copy"
    rm -rf -- "$copy"
    if [ -f "$p" ]; then
      cp -pL -- "$p" "$copy" && mv -f -- "$copy" "$p"
    else
      mkdir -- "$copy" && cp -a -- "$p/." "$copy/" && rm -f -- "$p" && mv -- "$copy" "$p" &&
        find "$p" -type l >>"$next" 2>/dev/null
    fi
    if [ -L "$p" ]; then
      rm -rf -- "$copy" "$p"
      echo "skillsbench-link dropped $p"
    else
      echo "skillsbench-link copied $p"
    fi
  done <"$work"
  [ -z "$over" ] || break
  mv -f -- "$next" "$work" || exit 1
done
rm -f -- "$work" "$next"
[ -z "$over" ] || exit 3
exit 0
