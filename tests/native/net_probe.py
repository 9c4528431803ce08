"""A native agent that tries the network directly, bypassing the proxy
(a TCP connection to an outside address), and reaches the run's server
(a request it does not serve, with the token). Prints both as JSON."""

import json
import os
import socket
import urllib.error
import urllib.request

try:
    socket.create_connection(("10.255.255.1", 80), timeout=3).close()
    direct = "connected"
except OSError as e:
    direct = e.errno if e.errno is not None else "timeout"

req = urllib.request.Request(
    os.environ["OPENAI_BASE_URL"] + "/models",
    headers={"authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
)
try:
    urllib.request.urlopen(req, timeout=10)
    server = 200
except urllib.error.HTTPError as e:
    server = e.code
print(json.dumps({"direct": direct, "server": server}))
