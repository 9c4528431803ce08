# Sourced by the install scripts beside it: virtual environments under the
# build folder, made with the system's python3 (not `pip install` into it:
# Debian 12 and other distributions refuse that, PEP 668).

# make_venv DIR: a fresh virtual environment at DIR.
make_venv() {
  if ! python3 -m venv "$1" 2>/dev/null; then
    # Debian ships venv's pip bootstrap separately.
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
      python3 -m venv "$1"
    else
      echo "cannot create a Python virtual environment; install python3-venv (Debian, Ubuntu) and run again" >&2
      return 1
    fi
  fi
}

# ensure_stamped_venv DIR PACKAGES [NOTE] [NO_DEPS]: a virtual environment
# at DIR holding PACKAGES (pip requirements, space-separated), installed once
# and found again by later runs: a stamp in DIR names what it holds, and a
# different list makes it anew. NOTE is shown beside the install message.
# NO_DEPS are installed after, without their declared dependencies (a
# package whose used part needs far less than it declares).
ensure_stamped_venv() {
  local venv="$1" packages="$2" no_deps="${4:-}"
  local stamp="$packages${no_deps:+ --no-deps $no_deps}"
  if [ "$(cat "$venv/.packages" 2>/dev/null)" != "$stamp" ]; then
    echo "installing $stamp into $venv${3:+ ($3)}"
    rm -rf "$venv"
    make_venv "$venv" || return 1
    # shellcheck disable=SC2086 # the lists are words for pip
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $packages || return 1
    if [ -n "$no_deps" ]; then
      # shellcheck disable=SC2086
      "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps $no_deps || return 1
    fi
    echo "$stamp" > "$venv/.packages"
  fi
}
