#!/usr/bin/env bash
# Write host/link-order.txt, the order the linker lays the `worldline`
# binary's functions out in (decision 0431): every function a durable
# suite, a fork at the middle of an N = 200 run, a fuzz campaign and a
# verify execute, hottest first, as callgrind counts their instructions.
# The rest of the binary's 30 MB of code (the compiler, the other
# commands) comes after them, so those paths touch ~3 MB of code pages
# instead of ~18 MB spread over the whole text.
#
# Usage, from the project root, with a release build and the caller
# guest built by the tests, and valgrind installed:
#   host/benches/link-order.sh WORLDLINE CALLER_WASM
# then rebuild (`cargo build --release -p worldline`): build.rs passes the
# file to the linker.
set -euo pipefail
if [ $# -ne 2 ]; then
  sed -n '/^# Usage/,/^#   host/p' "$0" >&2
  exit 2
fi
for tool in valgrind callgrind_annotate python3; do
  command -v "$tool" >/dev/null || { echo "link-order.sh: $tool is not installed" >&2; exit 2; }
done
root=$(pwd)
w=$(realpath "$1")
caller=$(realpath "$2")
[ -x "$w" ] && [ -f "$caller" ] || { echo "link-order.sh: $1 or $2 is not there" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/worlds"
cp -r "$root/tests/worlds/demo" "$tmp/worlds/"
cd "$tmp"
python3 "$root/host/benches/triage_cases.py" cases20 20 20
python3 "$root/host/benches/triage_cases.py" cases200 200 1
printf '[[tools]]\ntool = "add_note"\nlatency_ms = { p = 0.5, ms = [1, 2] }\n' >profile.toml
# Valgrind cannot reserve the address space of a pool of instances, and
# its CPU is not the host's: everything runs under it, the agent compiled
# once for that CPU before the profiles (else each would profile the
# compiler too).
export WORLDLINE_INSTANCE_POOL=0
vg=(valgrind --smc-check=all-non-file --log-file="$tmp/valgrind.log")
"${vg[@]}" --tool=none "$w" test cases200/c000.toml --agent "$caller" --store s >/dev/null 2>&1
rm -rf s/runs
profile() {
  local name=$1
  shift
  "${vg[@]}" --tool=callgrind --demangle=no --callgrind-out-file="$tmp/cg.$name" "$w" "$@" \
    >/dev/null 2>&1 || { echo "link-order.sh: worldline $* failed under valgrind ($tmp/valgrind.log)" >&2; exit 1; }
}
profile test test cases20 --agent "$caller" --store s --jobs 1
"${vg[@]}" --tool=none "$w" test cases200/c000.toml --agent "$caller" --store s200 >/dev/null 2>&1
run=$(basename "$(ls s200/runs/*.jsonl | head -1)" .jsonl)
profile fork fork "$run" --at 200 --store s200
profile fuzz fuzz cases20/c000.toml --agent "$caller" --faults profile.toml --runs 200 --jobs 1 --store s
profile verify verify --store s --jobs 1
for f in cg.*; do callgrind_annotate --threshold=100 "$f"; done | python3 -c '
import re, sys
binary = sys.argv[1]
cost = {}
for line in sys.stdin:
    m = re.match(r"^\s*([\d,]+) \(.*?\)\s+(\S+) \[(.*)\]$", line)
    if m and m[3] == binary:
        name = re.sub(r"'"'"'\d+$", "", m[2].rsplit(":", 1)[-1])
        cost[name] = cost.get(name, 0) + int(m[1].replace(",", ""))
names = sorted(cost, key=lambda n: (-cost[n], n))
sys.stdout.write("".join(n + "\n" for n in names))
' "$w" >"$root/host/link-order.txt"
echo "host/link-order.txt: $(wc -l <"$root/host/link-order.txt") functions"
