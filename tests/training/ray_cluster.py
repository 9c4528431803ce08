"""A local multi-node Ray cluster for the test of the Ray recipe
(contrib/ray/worldline_ray.py): NODES nodes of one CPU each, started with
Ray's own `ray.cluster_utils.Cluster` on loopback only, writing only under
TEMP (Ray's session folders and its address file).
It runs COMMAND with `{address}` replaced by the cluster's address, prints
its output, and shuts every node down, also when the command fails or this
process is told to stop (SIGTERM, SIGINT); run as the leader of a session
of its own, it then kills whatever of that session is left.

    python ray_cluster.py NODES TEMP COMMAND...
"""

import os
import signal
import subprocess
import sys
import time

# Every address the nodes, the workers and the driver use is 127.0.0.1:
# Ray otherwise advertises the machine's own address.
os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"

from ray.cluster_utils import Cluster  # noqa: E402


def stop(signum, _frame):
    raise SystemExit(128 + signum)


def main():
    nodes, temp, command = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    # Every node's session folder and Ray's address file under TEMP, none
    # in the machine's /tmp/ray.
    os.environ["RAY_TMPDIR"] = temp
    os.makedirs(os.path.join(temp, "ray"), exist_ok=True)
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    common = {"num_cpus": 1, "object_store_memory": 80 << 20}
    cluster = None
    child = None
    try:
        cluster = Cluster(
            initialize_head=True,
            head_node_args={**common, "include_dashboard": False},
        )
        for _ in range(nodes - 1):
            cluster.add_node(**common)
        cluster.wait_for_nodes()
        print(f"ray_cluster: {nodes} nodes at {cluster.address}", file=sys.stderr, flush=True)
        child = subprocess.Popen([a.replace("{address}", cluster.address) for a in command])
        return child.wait()
    finally:
        if child is not None and child.poll() is None:
            child.kill()
            child.wait()
        if cluster is not None:
            # Killed, not asked: the test only needs them gone, and a
            # graceful stop of each process costs seconds.
            for node in list(cluster.worker_nodes):
                cluster.remove_node(node, allow_graceful=False)
            if cluster.head_node is not None:
                cluster.remove_node(cluster.head_node, allow_graceful=False)
        end_session()


def session_members():
    """The other live processes of this process's session: every one the
    cluster started (the test starts this harness in a session of its own)."""
    sid, me, pids = os.getsid(0), os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z" and int(fields[3]) == sid:
            pids.append(int(name))
    return pids


def end_session():
    """Kill what a killed node leaves behind (its agents outlive it for a
    while), and wait until it is gone."""
    if os.getsid(0) != os.getpid():
        return  # not a session of our own: nothing here is only ours
    deadline = time.monotonic() + 20
    while (pids := session_members()) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main())
