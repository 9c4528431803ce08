#!/bin/sh
# Build the world's service (Python, with componentize-py:
# `pip install componentize-py==0.25.1` once, in a virtual environment) and
# the agent (with Node.js 20 or later; build-js says how to install its
# toolchain when it is missing).
set -eu
cd "$(dirname "$0")"
worldline="${WORLDLINE:-worldline}"
mkdir -p build
"$worldline" build-python --service service/tasks_service.py -o worlds/tasks/v1/service.wasm
"$worldline" build-js agent/agent.ts -o build/agent.wasm
