# Sourced by the scripts that create virtual environments: sets $python to a Python 3.11+
# ($PYTHON if given, else the first of python3.11, python3.12, python3 on PATH), or exits 2
# with a message prefixed by $1 (the calling script's name).
find_python() {
  python=${PYTHON:-}
  if [ -z "$python" ]; then
    for candidate in python3.11 python3.12 python3; do
      if command -v "$candidate" >/dev/null 2>&1; then python=$candidate; break; fi
    done
  fi
  [ -n "$python" ] || { echo "$1: Python 3.11 is needed (none found on PATH)" >&2; exit 2; }
  command -v "$python" >/dev/null 2>&1 || { echo "$1: no Python at $python" >&2; exit 2; }
  "$python" -c 'import sys; sys.exit(0 if sys.version_info[:2] >= (3, 11) else 1)' \
    || { echo "$1: $python is older than Python 3.11" >&2; exit 2; }
}
