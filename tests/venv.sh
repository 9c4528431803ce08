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

# ensure_stamped_venv DIR PACKAGES [NOTE]: a virtual environment at DIR
# holding PACKAGES (pip requirements, space-separated), installed once and
# found again by later runs: a stamp in DIR names what it holds, and a
# different list makes it anew. NOTE is shown beside the install message.
ensure_stamped_venv() {
  local venv="$1" packages="$2"
  if [ "$(cat "$venv/.packages" 2>/dev/null)" != "$packages" ]; then
    echo "installing $packages into $venv${3:+ ($3)}"
    rm -rf "$venv"
    make_venv "$venv" || return 1
    # shellcheck disable=SC2086 # the list is words for pip
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $packages || return 1
    echo "$packages" > "$venv/.packages"
  fi
}
