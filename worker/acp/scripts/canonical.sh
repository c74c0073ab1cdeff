# shellcheck shell=sh
# canon PATH: prints PATH made absolute with every existing symlink followed and missing
# components taken as they are. `realpath -m` where the sandbox has it (coreutils); else the
# same walk in plain sh (busybox's realpath has no -m). Every command substitution ends in a
# sentinel `x`: `$(...)` drops trailing newlines, and a name or link target ending in one would
# otherwise be checked under a name it does not have.
nl='
'
canon() {
  if out=$(realpath -m -- "$1" 2>/dev/null && printf x); then
    out=${out%x}; printf '%s' "${out%"$nl"}"; return 0
  fi
  case $1 in /*) rest=$1 ;; *) rest=$(pwd -P && printf x) || return 1
    rest=${rest%x}; rest=${rest%"$nl"}/$1 ;; esac
  resolved=
  hops=0
  while :; do
    while :; do case $rest in /*) rest=${rest#/} ;; *) break ;; esac; done
    [ -n "$rest" ] || break
    comp=${rest%%/*}
    case $rest in */*) rest=${rest#*/} ;; *) rest= ;; esac
    case $comp in
      .) ;;
      ..) resolved=${resolved%/*} ;;
      *)
        if [ -L "$resolved/$comp" ]; then
          hops=$((hops + 1))
          [ "$hops" -le 40 ] || return 1
          target=$(readlink -- "$resolved/$comp" && printf x) || return 1
          target=${target%x}; target=${target%"$nl"}
          case $target in /*) resolved= ;; esac
          rest=$target${rest:+/$rest}
        else
          resolved=$resolved/$comp
        fi ;;
    esac
  done
  printf '%s' "${resolved:-/}"
}
