"""AgentDojo's slack suite's tools (agentdojo==0.1.35,
default_suites/v1/tools/slack.py and web.py) as a worldline world service:
the same names, arguments, semantics and error texts (`TypeName:
message`, as AgentDojo's FunctionsRuntime writes a raised exception), over
the tables `users` (a row per user: whether they are in the workspace's
user list, their channels, whether they have an inbox; the order AgentDojo's
dicts keep as `seq`), `channels`, `user_inbox`, `channel_inbox` (a row per
message, keyed in the order they were written), `web_content` and
`web_requests`. Written by `worldline bench import agentdojo/slack`;
ported by hand (decision 0374)."""

import worldline_service as ws

USERS = ws.Table("users")
CHANNELS = ws.Table("channels")
USER_INBOX = ws.Table("user_inbox")
CHANNEL_INBOX = ws.Table("channel_inbox")
WEB_CONTENT = ws.Table("web_content")
WEB_REQUESTS = ws.Table("web_requests")


def _fail(kind, message):
    raise ws.ToolError(f"{kind}: {message}")


def _member(user):
    row = USERS.get(user) if isinstance(user, str) else None
    return row if row and row["member"] else None


def _channel(channel):
    return CHANNELS.get(channel) if isinstance(channel, str) else None


def _next(table):
    return max((r["id"] for r in table.query()), default=0) + 1


def _message(m):
    return {"sender": m["sender"], "recipient": m["recipient"], "body": m["body"]}


@ws.tool
def get_channels():
    return [c["name"] for c in sorted(CHANNELS.query(), key=lambda c: c["seq"])]


@ws.tool
def add_user_to_channel(user, channel):
    row = _member(user)
    if row is None:
        _fail("ValueError", f"User {user} not found in the users list")
    if _channel(channel) is None:
        _fail("ValueError", f"Channel {channel} not found in the channels list")
    USERS.update(user, channels=row["channels"] + [channel])
    return None


@ws.tool
def read_channel_messages(channel):
    if _channel(channel) is None:
        _fail("ValueError", "Channel does not exist!")
    return [_message(m) for m in CHANNEL_INBOX.query() if m["channel"] == channel]


@ws.tool
def read_inbox(user):
    if _member(user) is None:
        _fail("ValueError", f"User {user} not found in the users list")
    return [_message(m) for m in USER_INBOX.query() if m["user"] == user]


@ws.tool
def send_direct_message(recipient, body):
    if _member(recipient) is None:
        _fail("ValueError", f"Recipient {recipient} not found in the users list")
    USER_INBOX.insert({"id": _next(USER_INBOX), "user": recipient, "sender": "bot",
                       "recipient": recipient, "body": body})
    USERS.update(recipient, inbox=True)
    return None


@ws.tool
def send_channel_message(channel, body):
    if _channel(channel) is None:
        _fail("ValueError", f"Channel {channel} not found in the channels list")
    CHANNEL_INBOX.insert({"id": _next(CHANNEL_INBOX), "channel": channel, "sender": "bot",
                          "recipient": channel, "body": body})
    CHANNELS.update(channel, inbox=True)
    return None


@ws.tool
def get_users_in_channel(channel):
    if _channel(channel) is None:
        _fail("ValueError", f"Channel {channel} not found in the channels list")
    rows = sorted(USERS.query(), key=lambda u: u["seq"])
    return [u["name"] for u in rows if u["channels"] is not None and channel in u["channels"]]


def _clear_inbox(user):
    for m in USER_INBOX.query():
        if m["user"] == user:
            USER_INBOX.delete(str(m["id"]))


@ws.tool
def invite_user_to_slack(user, user_email):
    if _member(user) is not None:
        _fail("ValueError", f"User {user} already in the users list")
    row = USERS.get(user)
    # A new key of AgentDojo's dicts goes last; a kept one keeps its place.
    seq = row["seq"] if row and row["channels"] is not None else \
        max((u["seq"] for u in USERS.query()), default=0) + 1
    _clear_inbox(user)
    fields = {"member": True, "seq": seq, "channels": [], "inbox": True}
    if row:
        USERS.update(user, **fields)
    else:
        USERS.insert(dict(fields, name=user))
    return None


@ws.tool
def remove_user_from_slack(user):
    row = _member(user)
    if row is None:
        _fail("ValueError", f"User {user} not found in the users list")
    if not row["inbox"]:
        # `del slack.user_inbox[user]` fails (AgentDojo has taken the user
        # off its list by then; a call that errs here writes nothing).
        _fail("KeyError", repr(user))
    _clear_inbox(user)
    USERS.update(user, member=False, inbox=False, channels=None)
    return None


def _standard(url):
    if url.startswith("https://"):
        url = url[8:]
    if url.startswith("http://"):
        url = url[7:]
    return url


@ws.tool
def get_webpage(url):
    url = _standard(url)
    WEB_REQUESTS.insert({"id": _next(WEB_REQUESTS), "url": url})
    row = WEB_CONTENT.get(url)
    return "404 Not Found" if row is None else row["content"]


@ws.tool
def post_webpage(url, content):
    url = _standard(url)
    WEB_REQUESTS.insert({"id": _next(WEB_REQUESTS), "url": url})
    if WEB_CONTENT.get(url) is None:
        WEB_CONTENT.insert({"url": url, "content": content})
    else:
        WEB_CONTENT.update(url, content=content)
    return None
