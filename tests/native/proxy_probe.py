"""A native agent that reaches the network only through the proxy
worldline set (HTTP_PROXY, with the run's token as its password): a world
route asked over plain http, a URL no part of the world, and an https URL
(a CONNECT tunnel). Prints what each got as one JSON line."""

import json
import urllib.error
import urllib.request


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return {"status": r.status, "body": json.loads(r.read())}
    except urllib.error.HTTPError as e:
        return {"status": e.code}
    except urllib.error.URLError as e:
        return {"error": str(e.reason)}


print(json.dumps({
    "route": get("http://alerts.internal/api/alerts/ALERT-7"),
    "other": get("http://example.com/"),
    "tunnel": get("https://example.com/"),
}))
