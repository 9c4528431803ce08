"""What AgentDojo's travel and workspace services share (agentdojo==0.1.35,
default_suites/v1/tools/email_client.py and calendar_client.py, which
both suites use): the account's address, the world's clock as
AgentDojo's `datetime.now()`, rows in the order AgentDojo's dicts keep
(`seq`), the ids `_get_next_id` gives, `datetime.strptime` with CPython's
error texts, `Inbox.send_email`, and `send_email`'s attachments. Written
beside the service by `worldline bench import agentdojo/travel` and
`agentdojo/workspace`, which import it (decisions 0375, 0378)."""

import datetime
import re

import worldline_service as ws

EMAILS = ws.Table("emails")
ACCOUNT = ws.Table("account")


def fail(kind, message):
    """An error as AgentDojo's FunctionsRuntime writes a raised exception."""
    raise ws.ToolError(f"{kind}: {message}")


def me():
    return ACCOUNT.require("account")["email"]


def now():
    """The world's clock as AgentDojo's naive `datetime.now()` dumps it."""
    return datetime.datetime.fromisoformat(ws.now().replace("Z", "+00:00")).replace(
        tzinfo=None).isoformat()


def rows(table):
    return sorted(table.query(), key=lambda r: r["seq"])


def dump(row):
    return {k: v for k, v in row.items() if k != "seq"}


def next_id(table):
    """AgentDojo's `_get_next_id`: one more than the largest id, as text."""
    return str(max((int(r["id_"]) for r in table.query()), default=0) + 1)


def next_seq(table):
    return max((r["seq"] for r in table.query()), default=0) + 1


# `datetime.strptime` for the two formats the tools take, with its error
# texts: CPython's `_strptime` module is not in the built component.
_FORMATS = {"%Y-%m-%d": re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})"),
            "%Y-%m-%d %H:%M": re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})\s+(\d{1,2}):(\d{1,2})")}


def strptime(text, fmt):
    if not isinstance(text, str):
        fail("TypeError", f"strptime() argument 1 must be str, not {type(text).__name__}")
    m = _FORMATS[fmt].match(text)
    if m is None:
        fail("ValueError", f"time data {text!r} does not match format {fmt!r}")
    if m.end() != len(text):
        fail("ValueError", f"unconverted data remains: {text[m.end():]}")
    try:
        return datetime.datetime(*(int(g) for g in m.groups()))
    except ValueError as e:
        fail("ValueError", str(e))


def send(recipients, subject, body, attachments=None, cc=None, bcc=None):
    """`Inbox.send_email`: a sent email, read, from the account."""
    email = {
        "id_": next_id(EMAILS), "seq": next_seq(EMAILS), "sender": me(), "body": body,
        "subject": subject, "recipients": list(recipients), "status": "sent",
        "timestamp": now(), "cc": list(cc or []), "bcc": list(bcc or []),
        "attachments": list(attachments or []), "read": True,
    }
    EMAILS.insert(email)
    return dump(email)


def attachments(given):
    """`send_email`'s attachments as AgentDojo parses them: a file's id,
    or an event's model."""
    if given is None:
        return None
    parsed = []
    for a in given:
        if not isinstance(a, dict):
            fail("ValueError", "Attachments must be dictionaries.")
        if "type" not in a:
            fail("ValueError", "Attachment must have a 'type' field.")
        if a["type"] == "file" or "file_id" in a:
            if "file_id" not in a:
                fail("ValueError", "Attachment of type 'file' must have a 'file_id' field.")
            parsed.append(str(a["file_id"]))
        else:
            if "event_details" not in a:
                fail("ValueError", "Attachment of type 'event' must have an 'event_details' field.")
            parsed.append(_event_model(a["event_details"]))
    return parsed


def _event_model(d):
    """`CalendarEvent(**d)` dumped: the fields AgentDojo's model keeps."""
    if not isinstance(d, dict):
        fail("TypeError", "argument after ** must be a mapping")
    out = {}
    for k in ("id_", "title", "description", "start_time", "end_time", "location",
              "participants"):
        if k not in d:
            fail("ValidationError", f"{k}: Field required")
        out[k] = d[k]
    out["all_day"] = bool(d.get("all_day", False))
    out["status"] = d.get("status", "confirmed")
    return out
