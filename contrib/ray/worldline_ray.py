"""Rollouts on Ray: a suite's rollouts fanned out over a Ray cluster.

Each Ray task runs one shard of the suite with the `worldline` binary
(`worldline test CASES --partition count:i/n --repeat N --store
postgres://...`), writing every run into one shared PostgreSQL store; the
store keeps each shard's report under the suite id, and the driver merges
them with `worldline merge --suite ID` (docs/decisions/0357). The cases,
the agent, the worlds and the binary must be at the same paths on every
node (one image or a shared volume), as in a CI matrix. A relative path is
made absolute from the driver's working folder before it is sent: a shard
runs in its Ray worker's folder (where `ray start` ran), not the driver's.
Likewise a shard has the environment of `ray start`, not the driver's: the
driver's `PGPASSWORD`, `PGSSLMODE` and `PGSSLROOTCERT` (and each `--env
NAME`) are sent as the tasks' argument, never printed (not in Ray's
`runtime_env`, whose agent writes its variables into every node's logs);
a password in the `--store` address goes to each shard's worldline as
its `PGPASSWORD`, not on its command line.

    python -m worldline_ray --cases cases/ --rollouts 8 --address HOST:6379 \
        --store postgres://... --agent agent.wasm --json

Needs only the standard library and `ray`.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time
import urllib.parse

# What a shard's report may hold before it is refused (a report is a few
# hundred bytes a case): read whole, a larger one would be a runaway.
REPORT_CAP = 64 << 20
# The tail of a failing command's stderr shown in the error.
STDERR_TAIL = 4000
# How long the cluster's address may take to accept a connection: Ray's
# own client retries an address that never answers for many minutes.
CONNECT_TIMEOUT_S = 10
# How long a driver may take to join the cluster once it took the
# connection (a loaded local cluster joins in a few seconds).
INIT_TIMEOUT_S = 60
# What a shard's worldline reads for a PostgreSQL store besides its
# address (docs/cli.md "Database stores"), sent from the driver when set.
STORE_ENV = ("PGPASSWORD", "PGSSLMODE", "PGSSLROOTCERT")


class RecipeError(Exception):
    """A failure the recipe reports with what to do, exit 2."""


def shard_command(args, index, shards):
    """The `worldline test` command of shard `index` (1-based) of `shards`."""
    cmd = [args.worldline, "test", *args.cases, "--store", args.store]
    cmd += ["--partition", f"count:{index}/{shards}"]
    if args.suite_id:
        cmd += ["--suite-id", args.suite_id]
    cmd += ["--repeat", str(args.rollouts), "--jobs", str(args.jobs), "--json"]
    if args.agent:
        cmd += ["--agent", args.agent]
    if args.worlds:
        cmd += ["--worlds", args.worlds]
    for kv in args.model_set:
        cmd += ["--model-set", kv]
    return cmd


def split_password(address):
    """A PostgreSQL `address` without its password, and the password
    (None when it holds none): after the user (`USER:PASSWORD@`, the
    password percent-encoded or not, as worldline reads it) or libpq's
    `password=` key, which wins when both are given."""
    scheme, sep, rest = address.partition("://")
    if not sep or not scheme.startswith("postgres"):
        return address, None
    head, q, query = rest.partition("?")
    password = None
    at = head.rfind("@")
    user, colon, given = head[:max(at, 0)].partition(":")
    if at >= 0 and colon:
        password = urllib.parse.unquote(given)
        head = user + head[at:]
    kept = []
    for pair in query.split("&") if q else []:
        key, _, value = pair.partition("=")
        if key == "password":
            password = urllib.parse.unquote_plus(value)
        else:
            kept.append(pair)
    return f"{scheme}://{head}" + ("?" + "&".join(kept) if kept else ""), password


def shown(cmd):
    """`cmd` as a line to print: a password in an address left out."""
    return " ".join(split_password(a)[0] for a in cmd)


def run_command(cmd, what, env):
    """Run `cmd` with `env` added to this process's environment: its exit
    code and parsed JSON stdout; exit 0 and 1 (a graded failure) are
    results, anything else a RecipeError."""
    try:
        out = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, env={**os.environ, **env})
    except OSError as e:
        raise RecipeError(
            f"{what} could not start {cmd[0]} ({e}): install worldline on every node or pass --worldline PATH"
        ) from e
    if out.returncode not in (0, 1):
        tail = out.stderr.decode("utf-8", "replace")[-STDERR_TAIL:]
        # With --json the reason is in the report (stdout), not stderr: its
        # error, or the cases that could not be read.
        try:
            report = json.loads(out.stdout[:REPORT_CAP])
        except ValueError:
            report = None
        if isinstance(report, dict):
            said = [report["error"]] if isinstance(report.get("error"), dict) else []
            said += [e for e in report.get("collection_errors") or [] if isinstance(e, dict)]
            where = lambda e: ":".join(str(e[k]) for k in ("file", "line") if e.get(k))
            lines = [f"{where(e)}: {e.get('message')}".lstrip(": ") for e in said]
            tail = "\n".join([*lines, tail])
        raise RecipeError(f"{what} exited {out.returncode}: {shown(cmd)}\n{tail}")
    if len(out.stdout) > REPORT_CAP:
        raise RecipeError(f"{what} printed more than {REPORT_CAP} bytes of JSON")
    try:
        return out.returncode, json.loads(out.stdout)
    except ValueError as e:
        raise RecipeError(f"{what} printed no JSON report ({e}): {shown(cmd)}") from e


def run_shard(args, env, index, shards):
    """One Ray task: shard `index`, its worldline given `env` (the
    driver's variables it needs); the node it ran on and the suite id its
    report is kept under (the counts are the merged report's)."""
    import ray

    _, report = run_command(shard_command(args, index, shards), f"shard {index}/{shards}", env)
    # worldline's own default: the start of the selection's hash, which
    # every shard of one selection shares.
    suite = args.suite_id or report.get("shard", {}).get("selection", "")[:12]
    return {"suite_id": suite, "node": ray.get_runtime_context().get_node_id()}


def summary_of(merged, shard_results, wall_s):
    """The recipe's summary from the merged report and the shards."""
    cases = merged.get("cases", [])
    rollouts = sum(c.get("runs", 1) for c in cases)
    passed = sum(c.get("passes", 1 if c.get("passed") else 0) for c in cases)
    return {
        "suite_id": merged.get("suite_id"),
        "cases": len(cases),
        "rollouts": rollouts,
        "passed": passed,
        "failed": rollouts - passed,
        "cases_passed": merged.get("passed"),
        "cases_failed": merged.get("failed"),
        "shards": len(shard_results),
        "nodes": len({r["node"] for r in shard_results}),
        "wall_s": round(wall_s, 3),
        "rollouts_per_s": round(rollouts / wall_s, 2) if wall_s > 0 else None,
        "pass_at_k": merged.get("pass_at_k"),
        "pass_k": merged.get("pass_k"),
    }


def unreachable(address, why):
    """The recipe's error for a cluster it cannot reach at `address`."""
    return RecipeError(
        f"cannot reach the Ray cluster at {address} ({why}): start one (`ray start --head`) or pass its address"
    )


def check_joinable(address):
    """Refuse a cluster that takes the connection but that a driver here
    cannot finish joining within INIT_TIMEOUT_S (Ray's client retries
    such a one without end, e.g. when this machine's node address is not
    one the cluster reaches): `ray.init` is tried first in a process of
    its own, which is killed if it takes longer."""
    probe = (
        "import sys, ray\n"
        "ray.init(address=sys.argv[1], log_to_driver=False, logging_level='ERROR')\n"
        "ray.shutdown()\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", probe, address],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        _, err = child.communicate(timeout=INIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, 9)
        child.wait()
        raise unreachable(
            address,
            f"it took the connection, but a driver here had not joined it after {INIT_TIMEOUT_S} s; "
            "a cluster whose nodes listen on an address this machine's Ray does not use as its own "
            "(one started on loopback while this machine's address is another) is such a cluster",
        ) from None
    if child.returncode != 0:
        tail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or ["no message"]
        raise unreachable(address, tail[0])


def check_reachable(address):
    """Refuse a `HOST:PORT` (or `ray://HOST:PORT`) that takes no TCP
    connection within CONNECT_TIMEOUT_S; `auto` and `local` are Ray's to
    find."""
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S).close()
    except OSError as e:
        raise unreachable(address, e) from e


def shard_env(args):
    """The driver's variables a shard's worldline needs: the store's
    (STORE_ENV) that are set, and each `--env NAME`; a relative
    `PGSSLROOTCERT` made absolute, as the path arguments are."""
    env = {n: os.environ[n] for n in (*STORE_ENV, *args.env) if os.environ.get(n)}
    if env.get("PGSSLROOTCERT", "system") != "system":
        env["PGSSLROOTCERT"] = os.path.abspath(env["PGSSLROOTCERT"])
    return env


def check_cpus(args, ray):
    """Refuse `--cpus-per-shard` more than the largest node has: Ray would
    hold such a task for good, saying so only in logs the driver hides."""
    largest = max(
        (n.get("Resources", {}).get("CPU", 0) for n in ray.nodes() if n.get("Alive")),
        default=0,
    )
    if args.cpus_per_shard > largest:
        cpus = f"{largest:g} CPU" + ("" if largest == 1 else "s")
        raise RecipeError(
            f"--cpus-per-shard {args.cpus_per_shard:g} is more than the largest node of the cluster has "
            f"({cpus}), so no shard could start: give at most {largest:g}"
        )


def fan_out(args):
    """Run the suite's shards as Ray tasks, then merge them from the store."""
    import ray

    check_reachable(args.address)
    if args.address != "local":
        check_joinable(args.address)
    # The password goes in the shards' environment, not on their command
    # lines (any user of a node reads another's); the environment goes as
    # the tasks' argument, not Ray's `runtime_env`, whose agent writes its
    # variables into every node's `runtime_env_agent.log`.
    args.store, password = split_password(args.store)
    env = shard_env(args)
    if password is not None:
        env["PGPASSWORD"] = password
    try:
        ray.init(address=args.address, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise unreachable(args.address, e) from e
    try:
        check_cpus(args, ray)
        shards = args.shards or max(1, int(ray.cluster_resources().get("CPU", 1)))
        # No retries: a shard run twice would store its runs twice.
        task = ray.remote(num_cpus=args.cpus_per_shard, max_retries=0)(run_shard)
        start = time.monotonic()
        spread = task.options(scheduling_strategy="SPREAD")
        pending = [spread.remote(args, env, i, shards) for i in range(1, shards + 1)]
        try:
            results = ray.get(pending)
        except ray.exceptions.RayTaskError as e:
            cause = e.cause if isinstance(getattr(e, "cause", None), RecipeError) else e
            raise RecipeError(str(cause)) from e
        except ray.exceptions.RayError as e:
            # A worker or a node that died (an OOM kill, a node gone): no
            # report, and its shard's runs may be partly stored.
            raise RecipeError(
                f"a shard's Ray task ended without its report ({type(e).__name__}: {e}); "
                "the runs it made are in the store: run the recipe again (each shard's report is replaced)"
            ) from e
        suites = sorted({r["suite_id"] for r in results})
        if len(suites) != 1 or not suites[0]:
            raise RecipeError(f"the shards kept their reports under different suite ids: {suites}")
        merge = [args.worldline, "merge", "--suite", suites[0], "--store", args.store, "--json"]
        _, merged = run_command(merge, "worldline merge", env)
        wall = time.monotonic() - start
    finally:
        ray.shutdown()
    merged["suite_id"] = suites[0]
    return summary_of(merged, results, wall)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m worldline_ray",
        description="Fan a worldline suite's rollouts out over a Ray cluster into one PostgreSQL store.",
    )
    p.add_argument("--cases", action="append", required=True, metavar="DIR", help="case files or folders (repeatable)")
    p.add_argument("--rollouts", type=int, required=True, metavar="N", help="rollouts per case (test --repeat N)")
    p.add_argument("--address", required=True, help="the Ray cluster (HOST:PORT, or auto)")
    p.add_argument("--store", required=True, help="the shared store: postgres://...")
    p.add_argument("--suite-id", help="the id the shards' reports are kept under (default: worldline's, from the selection)")
    p.add_argument("--agent", help="the agent component, at this path on every node")
    p.add_argument("--worlds", help="the worlds folder")
    p.add_argument("--shards", type=int, default=0, help="Ray tasks (default: the cluster's CPUs)")
    p.add_argument("--cpus-per-shard", type=float, default=1.0, help="CPUs a shard's task holds (default 1)")
    p.add_argument("--jobs", type=int, default=1, help="runs at once inside a shard (test --jobs)")
    p.add_argument("--model-set", action="append", default=[], metavar="K=V", help="the model endpoint's settings (test --model-set)")
    p.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME",
        help="send the driver's variable NAME to every shard (repeatable; e.g. the model's api_key_env)",
    )
    p.add_argument("--worldline", default="worldline", help="the worldline binary on every node (default: on PATH)")
    p.add_argument("--json", action="store_true", help="print the summary as one JSON document")
    args = p.parse_args(argv)
    if args.rollouts < 1:
        p.error("--rollouts must be at least 1")
    if args.jobs < 1:
        p.error("--jobs must be at least 1")
    if not args.cpus_per_shard > 0:
        p.error("--cpus-per-shard must be more than 0")
    if args.shards < 0:
        p.error("--shards must be at least 1 (or 0 for the cluster's CPUs)")
    if not args.store.startswith(("postgres://", "postgresql://")):
        p.error("--store must be a PostgreSQL store (postgres://...): every node writes into it")
    for name in args.env:
        if not os.environ.get(name):
            p.error(f"--env {name}: the driver has no {name} to send (export it, or leave --env {name} out)")
    absolute(args)
    return args


def absolute(args):
    """Make the path arguments absolute from the driver's working folder:
    a shard runs in its Ray worker's, where `cases/` was no such folder.
    A `--worldline` without a folder is looked up on each node's PATH."""
    args.cases = [os.path.abspath(c) for c in args.cases]
    for key in ("agent", "worlds"):
        if getattr(args, key):
            setattr(args, key, os.path.abspath(getattr(args, key)))
    if os.sep in args.worldline:
        args.worldline = os.path.abspath(args.worldline)


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        summary = fan_out(args)
    except RecipeError as e:
        print(f"worldline_ray: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    else:
        print(
            f"{summary['rollouts']} rollouts of {summary['cases']} cases on {summary['nodes']} node(s), "
            f"{summary['shards']} shard(s): {summary['passed']} passed, {summary['failed']} failed; "
            f"{summary['wall_s']} s, {summary['rollouts_per_s']} rollouts/s (suite {summary['suite_id']})"
        )
    return 1 if summary["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
