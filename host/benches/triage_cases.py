#!/usr/bin/env python3
"""The triage case of ../shared/bench/worldline_triage.sh: N `list_deploys`
calls and a note, graded on the note. For the scripts beside this one.

Usage:
  triage_cases.py FOLDER N COUNT   COUNT cases of N calls (c000.toml, ...),
                                   seeds 1000, 1001, ...
  triage_cases.py FILE.toml N      one case of N calls, seed 1000
"""
import os
import sys


def case(n, seed):
    calls = ['{ tool = "list_deploys", args = { service = "checkout" } }'] * n
    calls.append('{ tool = "add_note", args = { ticket = "T-1", text = "db saturation", author = "bench" } }')
    return f'''world = "demo@v1"
seed = {seed}
clock = 2026-03-01T12:00:00Z
task = {{ calls = [{", ".join(calls)}] }}

[expect]
status = "completed"
[[expect.state]]
table = "notes"
where = {{ ticket = "T-1", author = "bench" }}
count = 1
'''


def main(args):
    if len(args) == 2 and args[0].endswith(".toml"):
        with open(args[0], "w") as f:
            f.write(case(int(args[1]), 1000))
    elif len(args) == 3:
        os.makedirs(args[0], exist_ok=True)
        for i in range(int(args[2])):
            with open(os.path.join(args[0], f"c{i:03}.toml"), "w") as f:
                f.write(case(int(args[1]), 1000 + i))
    else:
        sys.exit(__doc__)


main(sys.argv[1:])
