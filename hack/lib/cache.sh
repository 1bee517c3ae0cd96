# The cache preamble of the hack/build-*.sh scripts, sourced by each: every tool is built from Go modules
# into a cache outside the repo, keyed by its version, and a complete cache is reused at once.
#
# cache_dir names a cache directory; cache_print_if_asked answers the script's --print-dir (or
# --print-path) without building; reuse_cached ends the script with the cached result when a check of the
# cache passes; require_go ends it with exit status 3 when there is no Go to build with. Each of them
# prints what the scripts print and ends the script the way they end (the last line printed is the result).

# cache_dir OVERRIDE KIND NAME: $OVERRIDE/NAME when the variable named OVERRIDE is set, else
# ${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-extender/KIND/NAME.
cache_dir() {
  local override=$1 kind=$2 name=$3
  echo "${!override:-${XDG_CACHE_HOME:-$HOME/.cache}/tfjob-extender/$kind}/$name"
}

# cache_print_if_asked FLAG RESULT [ARG]: when the script's first argument ARG is FLAG, print RESULT and exit 0.
cache_print_if_asked() {
  if [ "${3:-}" = "$1" ]; then
    echo "$2"
    exit 0
  fi
}

# reuse_cached WHAT RESULT CHECK...: when the command CHECK... succeeds, say WHAT is cached, print RESULT
# and exit 0.
reuse_cached() {
  local what=$1 result=$2
  shift 2
  if "$@"; then
    echo "[build] $what cached: $result"
    echo "$result"
    exit 0
  fi
}

# require_go WHAT: exit 3 with a message when `go` is not installed; WHAT says what is built from Go modules.
require_go() {
  if ! command -v go >/dev/null 2>&1; then
    echo "[build] error: 'go' is not installed; $1 (Go >= 1.26)." >&2
    exit 3
  fi
}
