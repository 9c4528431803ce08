#!/bin/sh
# Build the world's service and the agent with componentize-py
# (`pip install componentize-py==0.25.1` once, in a virtual environment).
set -eu
cd "$(dirname "$0")"
worldline="${WORLDLINE:-worldline}"
mkdir -p build
"$worldline" build-python --service service/tasks_service.py -o worlds/tasks/v1/service.wasm
"$worldline" build-python agent/agent.py -o build/agent.wasm
