"""Test guest in Python for what a sandbox must survive. At import it probes
for IPv6 by binding a socket, as urllib3 does when `requests` is imported
(at build time, when componentize-py snapshots the interpreter). The
task's `mode`:
- `network`: try the network the ways Python code does (`socket`
  lookups and connections, `urllib`, and `requests` when it is importable),
  each inside `try/except`, and return what each raised;
- `flood`: `print` `n` lines of 100 bytes (default 10 000), then return;
- `flood_then_raise`: the same on stderr, then raise an exception;
- `ok`: return at once."""

import encodings.idna  # noqa: F401 (host names are encoded with it; load it at build time)
import socket
import sys
import urllib.request

import worldline_guest as wl


def probe_ipv6():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
            return True
    except Exception:
        return False


HAS_IPV6 = probe_ipv6()


def attempt(what):
    try:
        return {"ok": repr(what())}
    except Exception as e:  # the point: the agent catches it
        return {"error": type(e).__name__, "message": str(e)}


def requests_get():
    try:
        import requests
    except ImportError:
        return "requests is not importable"
    return requests.get("http://example.com/", timeout=1).status_code


@wl.agent
def run(task):
    mode = task.get("mode", "ok")
    if mode == "network":
        return {
            "getaddrinfo": attempt(lambda: socket.getaddrinfo("example.com", 80)),
            "gethostbyname": attempt(lambda: socket.gethostbyname("example.com")),
            "create_connection": attempt(
                lambda: socket.create_connection(("93.184.216.34", 80), timeout=1)
            ),
            "urlopen": attempt(
                lambda: urllib.request.urlopen("http://example.com/", timeout=1).status
            ),
            "requests": attempt(requests_get),
            "ipv6_at_import": HAS_IPV6,
        }
    if mode == "flood":
        n = task.get("n", 10000)
        for i in range(n):
            print(f"{i:>6} " + "z" * 92)
        return {"lines": n}
    if mode == "exit_message":
        sys.exit("fatal: config missing")
    if mode == "exit_code":
        sys.exit(3)
    if mode == "flood_then_raise":
        for i in range(task.get("n", 10000)):
            print(f"{i:>6} " + "z" * 92, file=sys.stderr)
        raise RuntimeError("the provider answered 500")
    return {"ok": True}
