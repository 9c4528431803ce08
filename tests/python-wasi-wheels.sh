# Sourced by tests/run and examples/run: WASI builds of the Rust
# extensions the official Python SDKs need (jiter and pydantic-core for
# `openai` and `anthropic`, rpds-py for `mcp`'s jsonschema), built from
# their PyPI sources for componentize-py's CPython 3.14 as WebAssembly
# shared libraries and packed as wheels tagged cp314-cp314-wasi_0_0_0_wasm32
# (tests/wasi-wheel.py). Each is kept under the build folder ($1) by its
# own name and version (python-wasi-wheels/<name>-<version>/), so a second
# run costs nothing and adding a package builds only that one; sets
# PYTHON_WASI_WHEELS to python-wasi-wheels/wheels, one folder linking every
# wheel (`build-python --wasi-wheels`).
#
# How (decisions 0360, 0361): the pinned Rust toolchain with `rust-src`
# builds the standard library again (`-Z build-std`, allowed on stable by
# RUSTC_BOOTSTRAP=1) as position-independent code for wasm32-wasip1, and
# rust-lld links a `--shared` module whose C library calls (malloc, ...)
# stay imports that componentize-py resolves against the libc.so it
# carries; pyo3 is told the target Python by a config file, so no WASI
# CPython headers are needed. All three are pure Rust: no C compiler.
#
# To add another pure-Rust pyo3 extension: one line in the table below.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
# How each is built: Cargo's release profile as these settings change it.
PYTHON_WASI_WHEEL_RECIPE="CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_STRIP=true CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16"
# name==version  sdist folder  cargo args  Python source ("-": none)  built library  module
PYTHON_WASI_WHEEL_TABLE="
jiter==0.19.0 jiter-0.19.0 -p=jiter-python - jiter_python.wasm jiter
pydantic-core==2.50.5 pydantic_core-2.50.5 - python _pydantic_core.wasm pydantic_core._pydantic_core
rpds-py==2026.9.1 rpds_py-2026.9.1 - - rpds.wasm rpds
"

# wasi_wheel_build SRC_DIR CARGO_ARGS...: build SRC_DIR's extension crate
# for WASI into $work/cargo, by $PYTHON_WASI_WHEEL_RECIPE: without the
# fat link-time optimization and the one codegen unit jiter's and
# pydantic-core's release profiles ask for, which a library for a
# component gains nothing measurable from (its size within 2%) and which
# cost a sixth of the wheels' CPU (docs/benchmarks.md). A wheel kept by
# an earlier recipe is built again (the recipe is in its stamp).
wasi_wheel_build() {
  local src="$1"; shift
  # Outside a workspace of its own, cargo would take the one above it.
  grep -q '^\[workspace\]' "$src/Cargo.toml" || printf '\n[workspace]\n' >> "$src/Cargo.toml"
  # shellcheck disable=SC2086 # the recipe is words: one setting each
  (cd "$src" && RUSTC_BOOTSTRAP=1 \
    PYO3_CONFIG_FILE="$work/pyo3-wasi.cfg" PYO3_BUILD_EXTENSION_MODULE=1 \
    RUSTFLAGS="-C relocation-model=pic -C link-self-contained=no -C link-args=--experimental-pic -C link-args=--shared -L $work/nolibc" \
    env $PYTHON_WASI_WHEEL_RECIPE cargo build --quiet --release --lib --target wasm32-wasip1 -Z build-std=std,panic_abort \
      --target-dir "$work/cargo" "$@")
}

# wasi_wheel_key NAME==VERSION: the folder a package's wheel is kept in
# (the wheel's own spelling: pydantic_core-2.50.5).
wasi_wheel_key() { echo "$1" | sed 's/-/_/g; s/==/-/'; }

ensure_python_wasi_wheels() {
  local root; root="$(realpath -m "$1")/python-wasi-wheels"
  mkdir -p "$root" || return 1
  local missing="" spec rest
  while read -r spec rest; do
    [ -n "$spec" ] || continue
    [ "$(cat "$root/$(wasi_wheel_key "$spec")/.built" 2>/dev/null)" = "$PYTHON_WASI_WHEEL_RECIPE" ] ||
      missing="$missing $spec"
  done <<< "$PYTHON_WASI_WHEEL_TABLE"
  if [ -n "$missing" ]; then
    python_wasi_wheels_build "$root" $missing || return 1
  fi
  # One folder for pip's --find-links, linking every wheel of the table.
  rm -rf "$root/wheels" && mkdir -p "$root/wheels" || return 1
  while read -r spec rest; do
    [ -n "$spec" ] || continue
    ln -s "$root/$(wasi_wheel_key "$spec")"/*.whl "$root/wheels/" || return 1
  done <<< "$PYTHON_WASI_WHEEL_TABLE"
  export PYTHON_WASI_WHEELS="$root/wheels"
}

# python_wasi_wheels_build ROOT SPEC...: build the named packages of the
# table (a few minutes each), each into ROOT/<name>-<version>/.
python_wasi_wheels_build() {
  local root="$1"; shift
  echo "building WASI wheels of $* into $root (once per version; a few minutes each)"
  local work="$root/work"
  rm -rf "$work"
  mkdir -p "$work/nolibc" || return 1
  rustup component add rust-src >/dev/null 2>&1 || { echo "cannot add rust-src to the Rust toolchain (rustup component add rust-src)" >&2; return 1; }
  # pip prepares an sdist's metadata with its build backend: maturin.
  ensure_stamped_venv "$root/tools" "maturin==1.16.0" "to read the sdists' metadata" || return 1
  # The C library is linked by componentize-py, not here: an empty one
  # satisfies `-lc`, and its symbols stay imports of the shared module.
  printf '!<arch>\n' > "$work/nolibc/libc.a"
  printf 'implementation=CPython\nversion=3.14\nshared=true\nabi3=false\npointer_width=32\nsuppress_build_script_link_lines=false\n' > "$work/pyo3-wasi.cfg"
  local lib="$work/cargo/wasm32-wasip1/release" spec want dir args source built module key started
  for want in "$@"; do
    started=$SECONDS
    while read -r spec dir args source built module; do
      [ "$spec" = "$want" ] || continue
      key="$(wasi_wheel_key "$spec")"
      PATH="$root/tools/bin:$PATH" "$root/tools/bin/python" -m pip download --quiet --disable-pip-version-check \
        --no-deps --no-build-isolation --no-binary "${spec%%==*}" -d "$work/sdists" "$spec" || return 1
      tar xzf "$work/sdists/$dir.tar.gz" -C "$work" || return 1
      [ "$args" = - ] && args="" || args="${args//=/ }"
      [ "$source" = - ] || source="$work/$dir/$source"
      rm -rf "$root/$key"
      # shellcheck disable=SC2086 # the cargo arguments are words
      wasi_wheel_build "$work/$dir" $args &&
        python3 "$(dirname "${BASH_SOURCE[0]}")/wasi-wheel.py" "$work/$dir" "$source" \
          "$lib/$built" "$module" "$root/$key" >/dev/null || return 1
      echo "$PYTHON_WASI_WHEEL_RECIPE" > "$root/$key/.built"
      echo "built $(ls "$root/$key") in $((SECONDS - started)) s"
    done <<< "$PYTHON_WASI_WHEEL_TABLE"
  done
  rm -rf "$work"
}
