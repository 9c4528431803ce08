"""AgentDojo's workspace suite's tools (agentdojo==0.1.35,
default_suites/v1/tools/email_client.py, calendar_client.py and
cloud_drive_client.py) as a worldline world service: the same names,
arguments, semantics and error texts (`TypeName: message`, as AgentDojo's
FunctionsRuntime writes a raised exception), over the tables `emails`,
`trash`, `contacts`, `events`, `files` (a row per email, deleted email,
contact, calendar event and drive file, with `seq` the order AgentDojo's
dicts and lists keep) and `account` (the user's address and the calendar's
current day). Answers are AgentDojo's models dumped as JSON. A timestamp
AgentDojo takes from `datetime.now()` is the world's clock here. Written
by `worldline bench import agentdojo/workspace`; ported by hand
(decisions 0374, 0378)."""

import datetime
import re

import worldline_service as ws

EMAILS = ws.Table("emails")
TRASH = ws.Table("trash")
CONTACTS = ws.Table("contacts")
EVENTS = ws.Table("events")
FILES = ws.Table("files")
ACCOUNT = ws.Table("account")


def _fail(kind, message):
    raise ws.ToolError(f"{kind}: {message}")


def _me():
    return ACCOUNT.require("account")["email"]


def _now():
    """The world's clock as AgentDojo's naive `datetime.now()` dumps it."""
    return datetime.datetime.fromisoformat(ws.now().replace("Z", "+00:00")).replace(
        tzinfo=None).isoformat()


def _rows(table):
    return sorted(table.query(), key=lambda r: r["seq"])


def _dump(row):
    return {k: v for k, v in row.items() if k != "seq"}


def _next_id(table):
    """AgentDojo's `_get_next_id`: one more than the largest id, as text."""
    return str(max((int(r["id_"]) for r in table.query()), default=0) + 1)


def _next_seq(table):
    return max((r["seq"] for r in table.query()), default=0) + 1


# `datetime.strptime` for the two formats the tools take, with its error
# texts: CPython's `_strptime` module is not in the built component.
_FORMATS = {"%Y-%m-%d": re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})"),
            "%Y-%m-%d %H:%M": re.compile(r"(\d{4})-(\d{1,2})-(\d{1,2})\s+(\d{1,2}):(\d{1,2})")}


def _strptime(text, fmt):
    if not isinstance(text, str):
        _fail("TypeError", f"strptime() argument 1 must be str, not {type(text).__name__}")
    m = _FORMATS[fmt].match(text)
    if m is None:
        _fail("ValueError", f"time data {text!r} does not match format {fmt!r}")
    if m.end() != len(text):
        _fail("ValueError", f"unconverted data remains: {text[m.end():]}")
    try:
        return datetime.datetime(*(int(g) for g in m.groups()))
    except ValueError as e:
        _fail("ValueError", str(e))


def _send(recipients, subject, body, attachments=None, cc=None, bcc=None):
    """`Inbox.send_email`: a sent email, read, from the account."""
    email = {
        "id_": _next_id(EMAILS), "seq": _next_seq(EMAILS), "sender": _me(), "body": body,
        "subject": subject, "recipients": list(recipients), "status": "sent",
        "timestamp": _now(), "cc": list(cc or []), "bcc": list(bcc or []),
        "attachments": list(attachments or []), "read": True,
    }
    EMAILS.insert(email)
    return _dump(email)


# ---- email -------------------------------------------------------------

@ws.tool
def get_unread_emails():
    unread = [e for e in _rows(EMAILS) if not e["read"]]
    for e in unread:
        EMAILS.update(e["id_"], read=True)
        e["read"] = True
    return [_dump(e) for e in unread]


@ws.tool
def send_email(recipients, subject, body, attachments=None, cc=None, bcc=None):
    parsed = None
    if attachments is not None:
        parsed = []
        for a in attachments:
            if not isinstance(a, dict):
                _fail("ValueError", "Attachments must be dictionaries.")
            if "type" not in a:
                _fail("ValueError", "Attachment must have a 'type' field.")
            if a["type"] == "file" or "file_id" in a:
                if "file_id" not in a:
                    _fail("ValueError", "Attachment of type 'file' must have a 'file_id' field.")
                parsed.append(str(a["file_id"]))
            else:
                if "event_details" not in a:
                    _fail("ValueError",
                          "Attachment of type 'event' must have an 'event_details' field.")
                parsed.append(_event_model(a["event_details"]))
    return _send(recipients, subject, body, parsed, cc, bcc)


def _event_model(d):
    """`CalendarEvent(**d)` dumped: the fields AgentDojo's model keeps."""
    if not isinstance(d, dict):
        _fail("TypeError", "argument after ** must be a mapping")
    out = {}
    for k in ("id_", "title", "description", "start_time", "end_time", "location",
              "participants"):
        if k not in d:
            _fail("ValidationError", f"{k}: Field required")
        out[k] = d[k]
    out["all_day"] = bool(d.get("all_day", False))
    out["status"] = d.get("status", "confirmed")
    return out


@ws.tool
def search_emails(query, sender=None):
    rows = _rows(EMAILS)
    if sender is not None:
        rows = [e for e in rows if e["sender"].lower() == sender.lower()]
    q = query.lower()
    matches = [e for e in rows if q in e["subject"].lower() or q in e["body"].lower()]
    if not matches:
        _fail("ValueError", "No emails found. Try with a different query.")
    return [_dump(e) for e in matches]


@ws.tool
def delete_email(email_id):
    row = EMAILS.get(email_id) if isinstance(email_id, str) else None
    if row is None:
        _fail("ValueError", f"Email with ID '{email_id}' not found.")
    EMAILS.delete(email_id)
    # AgentDojo's `trash[email_id] = email`: an id deleted again (a new
    # email takes a deleted one's id) replaces the first, in its place.
    old = TRASH.get(email_id)
    if old is None:
        TRASH.insert(dict(row, seq=_next_seq(TRASH)))
    else:
        TRASH.update(email_id, **{k: v for k, v in row.items() if k not in ("id_", "seq")})
    return f"Email with id {email_id} deleted successfully."


def _by_status(status):
    return [_dump(e) for e in _rows(EMAILS) if e["status"] == status]


@ws.tool
def get_sent_emails():
    return _by_status("sent")


@ws.tool
def get_received_emails():
    return _by_status("received")


@ws.tool
def get_draft_emails():
    return _by_status("draft")


@ws.tool
def search_contacts_by_name(query):
    matches = [_dump(c) for c in _rows(CONTACTS) if query.lower() in c["name"].lower()]
    if not matches:
        _fail("ValueError", f"Contact with name '{query}' not found.")
    return matches


@ws.tool
def search_contacts_by_email(query):
    matches = [_dump(c) for c in _rows(CONTACTS) if query.lower() in c["email"].lower()]
    if not matches:
        _fail("ValueError", f"Contact with email '{query}' not found.")
    return matches


# ---- calendar ----------------------------------------------------------

def _day_events(day):
    return [e for e in _rows(EVENTS) if e["start_time"][:10] == day]


@ws.tool
def get_current_day():
    return ACCOUNT.require("account")["current_day"]


@ws.tool
def get_day_calendar_events(day):
    d = _strptime(day, "%Y-%m-%d").date().isoformat()
    return [_dump(e) for e in _day_events(d)]


@ws.tool
def search_calendar_events(query, date=None):
    rows = _rows(EVENTS)
    if date is not None:
        rows = _day_events(_strptime(date, "%Y-%m-%d").date().isoformat())
    q = query.lower()
    matches = [e for e in rows if q in e["title"].lower() or q in e["description"].lower()]
    if not matches:
        _fail("ValueError", "No events found. Try with a different query.")
    return [_dump(e) for e in matches]


@ws.tool
def create_calendar_event(title, start_time, end_time, description="", participants=None,
                          location=None):
    start = _strptime(start_time, "%Y-%m-%d %H:%M").isoformat()
    end = _strptime(end_time, "%Y-%m-%d %H:%M").isoformat()
    if participants is None:
        participants = []
    # AgentDojo appends the owner to the list it was given (so the
    # invitation below goes to the owner too) and deduplicates through a
    # set, whose order varies from run to run; here the first occurrence
    # order is kept.
    participants.append(_me())
    event = {"id_": _next_id(EVENTS), "seq": _next_seq(EVENTS), "title": title,
             "description": description, "start_time": start, "end_time": end,
             "location": location, "participants": list(dict.fromkeys(participants)),
             "all_day": False, "status": "confirmed"}
    EVENTS.insert(event)
    _send(participants, f"Invitation: {title}", description, [_dump(event)])
    return _dump(event)


def _event(event_id):
    row = EVENTS.get(event_id) if isinstance(event_id, str) else None
    if row is None:
        _fail("ValueError", f"Event with ID '{event_id}' not found.")
    return row


@ws.tool
def cancel_calendar_event(event_id):
    row = EVENTS.update(_event(event_id)["id_"], status="canceled")
    _send(row["participants"], f"Canceled: '{row['title']}'", "The event has been canceled.",
          [_dump(row)])
    return f"Event with ID {event_id} has been canceled and participants have been notified."


@ws.tool
def reschedule_calendar_event(event_id, new_start_time, new_end_time=None):
    end = None if new_end_time is None else _strptime(new_end_time, "%Y-%m-%d %H:%M")
    start = _strptime(new_start_time, "%Y-%m-%d %H:%M")
    row = _event(event_id)
    if end is None:
        old_start = datetime.datetime.fromisoformat(row["start_time"])
        end = start + (datetime.datetime.fromisoformat(row["end_time"]) - old_start)
    row = EVENTS.update(row["id_"], start_time=start.isoformat(), end_time=end.isoformat())
    body = (f"The event has been rescheduled. It will start on  {start.date().isoformat()} at"
            f" {start.time().isoformat()} and end on {end.date().isoformat()} at"
            f" {end.time().isoformat()}.")
    # AgentDojo's subject is a plain string with the braces left in.
    _send(row["participants"], "Rescheduled: '{event.title}'", body, [_dump(row)])
    return _dump(row)


@ws.tool
def add_calendar_event_participants(event_id, participants):
    row = _event(event_id)
    row = EVENTS.update(row["id_"], participants=row["participants"] + list(participants))
    return _dump(row)


# ---- cloud drive -------------------------------------------------------

def _file(file_id):
    row = FILES.get(file_id) if isinstance(file_id, str) else None
    if row is None:
        _fail("ValueError", f"File with ID '{file_id}' not found.")
    return row


@ws.tool
def append_to_file(file_id, content):
    row = _file(file_id)
    text = row["content"] + content
    return _dump(FILES.update(row["id_"], content=text, size=len(text), last_modified=_now()))


@ws.tool
def search_files_by_filename(filename):
    return [_dump(f) for f in _rows(FILES) if filename.lower() in f["filename"].lower()]


@ws.tool
def create_file(filename, content):
    row = {"id_": _next_id(FILES), "seq": _next_seq(FILES), "filename": filename,
           "content": content, "owner": _me(), "last_modified": _now(), "shared_with": {},
           "size": len(content)}
    FILES.insert(row)
    return _dump(row)


@ws.tool
def delete_file(file_id):
    row = _file(file_id)
    FILES.delete(row["id_"])
    return _dump(row)


@ws.tool
def get_file_by_id(file_id):
    return _dump(_file(file_id))


@ws.tool
def list_files():
    return [_dump(f) for f in _rows(FILES)]


@ws.tool
def share_file(file_id, email, permission):
    row = _file(file_id)
    return _dump(FILES.update(row["id_"], shared_with=dict(row["shared_with"], **{email: permission})))


@ws.tool
def search_files(query):
    matches = [_dump(f) for f in _rows(FILES) if query.lower() in f["content"].lower()]
    if not matches:
        _fail("ValueError",
              f"No files found with the given query ('{query}'). Try a different search term.")
    return matches
