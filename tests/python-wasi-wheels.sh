# Sourced by tests/run and examples/run: WASI builds of the Rust
# extensions the official Python SDKs need (jiter and pydantic-core for
# `openai`), built from their PyPI sources for componentize-py's CPython
# 3.14 as WebAssembly shared libraries and packed as wheels tagged
# cp314-cp314-wasi_0_0_0_wasm32 (tests/wasi-wheel.py). Kept under the build
# folder ($1) by their versions, so a second run costs nothing; sets
# PYTHON_WASI_WHEELS to the folder of wheels (`build-python --wasi-wheels`).
#
# How (decision 0360): the pinned Rust toolchain with `rust-src` builds the
# standard library again (`-Z build-std`, allowed on stable by
# RUSTC_BOOTSTRAP=1) as position-independent code for wasm32-wasip1, and
# rust-lld links a `--shared` module whose C library calls (malloc, ...)
# stay imports that componentize-py resolves against the libc.so it
# carries; pyo3 is told the target Python by a config file, so no WASI
# CPython headers are needed. Both packages are pure Rust: no C compiler.
. "$(dirname "${BASH_SOURCE[0]}")/venv.sh"
PYTHON_WASI_WHEEL_SOURCES="jiter==0.19.0 pydantic-core==2.50.5"

# wasi_wheel_build SRC_DIR CARGO_ARGS...: build SRC_DIR's extension crate
# for WASI into $target_dir.
wasi_wheel_build() {
  local src="$1"; shift
  # Outside a workspace of its own, cargo would take the one above it.
  grep -q '^\[workspace\]' "$src/Cargo.toml" || printf '\n[workspace]\n' >> "$src/Cargo.toml"
  (cd "$src" && RUSTC_BOOTSTRAP=1 \
    PYO3_CONFIG_FILE="$work/pyo3-wasi.cfg" PYO3_BUILD_EXTENSION_MODULE=1 \
    CARGO_PROFILE_RELEASE_OPT_LEVEL=s CARGO_PROFILE_RELEASE_STRIP=true \
    RUSTFLAGS="-C relocation-model=pic -C link-self-contained=no -C link-args=--experimental-pic -C link-args=--shared -L $work/nolibc" \
    cargo build --quiet --release --lib --target wasm32-wasip1 -Z build-std=std,panic_abort \
      --target-dir "$work/cargo" "$@")
}

ensure_python_wasi_wheels() {
  local root; root="$(realpath -m "$1")/python-wasi-wheels"
  local out="$root/$(echo "$PYTHON_WASI_WHEEL_SOURCES" | sed 's/==/-/g; s/ /_/g')"
  if [ -f "$out/.built" ]; then
    export PYTHON_WASI_WHEELS="$out/wheels"
    return 0
  fi
  echo "building WASI wheels of $PYTHON_WASI_WHEEL_SOURCES into $out (once; a few minutes)"
  local work="$out/work" started=$SECONDS
  rm -rf "$out"
  mkdir -p "$work/nolibc" "$out/wheels" || return 1
  rustup component add rust-src >/dev/null 2>&1 || { echo "cannot add rust-src to the Rust toolchain (rustup component add rust-src)" >&2; return 1; }
  # pip prepares an sdist's metadata with its build backend: maturin.
  ensure_stamped_venv "$root/tools" "maturin==1.16.0" "to read the sdists' metadata" || return 1
  # shellcheck disable=SC2086 # the list is words for pip
  PATH="$root/tools/bin:$PATH" "$root/tools/bin/python" -m pip download --quiet --disable-pip-version-check \
    --no-deps --no-build-isolation --no-binary jiter,pydantic-core -d "$work/sdists" \
    $PYTHON_WASI_WHEEL_SOURCES || return 1
  for sdist in "$work"/sdists/*.tar.gz; do tar xzf "$sdist" -C "$work" || return 1; done
  # The C library is linked by componentize-py, not here: an empty one
  # satisfies `-lc`, and its symbols stay imports of the shared module.
  printf '!<arch>\n' > "$work/nolibc/libc.a"
  printf 'implementation=CPython\nversion=3.14\nshared=true\nabi3=false\npointer_width=32\nsuppress_build_script_link_lines=false\n' > "$work/pyo3-wasi.cfg"
  local lib="$work/cargo/wasm32-wasip1/release"
  wasi_wheel_build "$work/jiter-0.19.0" -p jiter-python &&
    python3 "$(dirname "${BASH_SOURCE[0]}")/wasi-wheel.py" "$work/jiter-0.19.0" - \
      "$lib/jiter_python.wasm" jiter "$out/wheels" >/dev/null || return 1
  wasi_wheel_build "$work/pydantic_core-2.50.5" &&
    python3 "$(dirname "${BASH_SOURCE[0]}")/wasi-wheel.py" "$work/pydantic_core-2.50.5" \
      "$work/pydantic_core-2.50.5/python" "$lib/_pydantic_core.wasm" \
      pydantic_core._pydantic_core "$out/wheels" >/dev/null || return 1
  rm -rf "$work"
  echo "built $(ls "$out/wheels" | tr '\n' ' ')in $((SECONDS - started)) s"
  touch "$out/.built"
  export PYTHON_WASI_WHEELS="$out/wheels"
}
