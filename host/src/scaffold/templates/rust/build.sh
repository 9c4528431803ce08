#!/bin/sh
# Build the agent and the world's service for wasm32-wasip2
# (`rustup target add wasm32-wasip2` once).
set -eu
cd "$(dirname "$0")"
target="${CARGO_TARGET_DIR:-target}"
cargo build --release --target wasm32-wasip2
cp "$target/wasm32-wasip2/release/tasks_service.wasm" worlds/tasks/v1/service.wasm
echo "built $target/wasm32-wasip2/release/agent.wasm and worlds/tasks/v1/service.wasm"
