"""AgentDojo's workspace suite's tools (agentdojo==0.1.35,
default_suites/v1/tools/email_client.py, calendar_client.py and
cloud_drive_client.py) as a worldline world service: the same names,
arguments, semantics and error texts (`TypeName: message`, as AgentDojo's
FunctionsRuntime writes a raised exception), over the tables `emails`,
`trash`, `contacts`, `events`, `files` (a row per email, deleted email,
contact, calendar event and drive file, with `seq` the order AgentDojo's
dicts and lists keep) and `account` (the user's address and the calendar's
current day). Answers are AgentDojo's models dumped as JSON. A timestamp
AgentDojo takes from `datetime.now()` is the world's clock here; the
email and calendar helpers it shares with the travel port are in
`agentdojo_mail.py`, beside it. Written by `worldline bench import
agentdojo/workspace`; ported by hand (decisions 0374, 0378)."""

import datetime

import agentdojo_mail as mail
import worldline_service as ws

EMAILS = ws.Table("emails")
TRASH = ws.Table("trash")
CONTACTS = ws.Table("contacts")
EVENTS = ws.Table("events")
FILES = ws.Table("files")
ACCOUNT = ws.Table("account")


# ---- email -------------------------------------------------------------

@ws.tool
def get_unread_emails():
    unread = [e for e in mail.rows(EMAILS) if not e["read"]]
    for e in unread:
        EMAILS.update(e["id_"], read=True)
        e["read"] = True
    return [mail.dump(e) for e in unread]


@ws.tool
def send_email(recipients, subject, body, attachments=None, cc=None, bcc=None):
    return mail.send(recipients, subject, body, mail.attachments(attachments), cc, bcc)


@ws.tool
def search_emails(query, sender=None):
    rows = mail.rows(EMAILS)
    if sender is not None:
        rows = [e for e in rows if e["sender"].lower() == sender.lower()]
    q = query.lower()
    matches = [e for e in rows if q in e["subject"].lower() or q in e["body"].lower()]
    if not matches:
        mail.fail("ValueError", "No emails found. Try with a different query.")
    return [mail.dump(e) for e in matches]


@ws.tool
def delete_email(email_id):
    row = EMAILS.get(email_id) if isinstance(email_id, str) else None
    if row is None:
        mail.fail("ValueError", f"Email with ID '{email_id}' not found.")
    EMAILS.delete(email_id)
    # AgentDojo's `trash[email_id] = email`: an id deleted again (a new
    # email takes a deleted one's id) replaces the first, in its place.
    old = TRASH.get(email_id)
    if old is None:
        TRASH.insert(dict(row, seq=mail.next_seq(TRASH)))
    else:
        TRASH.update(email_id, **{k: v for k, v in row.items() if k not in ("id_", "seq")})
    return f"Email with id {email_id} deleted successfully."


def _by_status(status):
    return [mail.dump(e) for e in mail.rows(EMAILS) if e["status"] == status]


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
    matches = [mail.dump(c) for c in mail.rows(CONTACTS) if query.lower() in c["name"].lower()]
    if not matches:
        mail.fail("ValueError", f"Contact with name '{query}' not found.")
    return matches


@ws.tool
def search_contacts_by_email(query):
    matches = [mail.dump(c) for c in mail.rows(CONTACTS) if query.lower() in c["email"].lower()]
    if not matches:
        mail.fail("ValueError", f"Contact with email '{query}' not found.")
    return matches


# ---- calendar ----------------------------------------------------------

def _day_events(day):
    return [e for e in mail.rows(EVENTS) if e["start_time"][:10] == day]


@ws.tool
def get_current_day():
    return ACCOUNT.require("account")["current_day"]


@ws.tool
def get_day_calendar_events(day):
    d = mail.strptime(day, "%Y-%m-%d").date().isoformat()
    return [mail.dump(e) for e in _day_events(d)]


@ws.tool
def search_calendar_events(query, date=None):
    rows = mail.rows(EVENTS)
    if date is not None:
        rows = _day_events(mail.strptime(date, "%Y-%m-%d").date().isoformat())
    q = query.lower()
    matches = [e for e in rows if q in e["title"].lower() or q in e["description"].lower()]
    if not matches:
        mail.fail("ValueError", "No events found. Try with a different query.")
    return [mail.dump(e) for e in matches]


@ws.tool
def create_calendar_event(title, start_time, end_time, description="", participants=None,
                          location=None):
    start = mail.strptime(start_time, "%Y-%m-%d %H:%M").isoformat()
    end = mail.strptime(end_time, "%Y-%m-%d %H:%M").isoformat()
    if participants is None:
        participants = []
    # AgentDojo appends the owner to the list it was given (so the
    # invitation below goes to the owner too) and deduplicates through a
    # set, whose order varies from run to run; here the first occurrence
    # order is kept.
    participants.append(mail.me())
    event = {"id_": mail.next_id(EVENTS), "seq": mail.next_seq(EVENTS), "title": title,
             "description": description, "start_time": start, "end_time": end,
             "location": location, "participants": list(dict.fromkeys(participants)),
             "all_day": False, "status": "confirmed"}
    EVENTS.insert(event)
    mail.send(participants, f"Invitation: {title}", description, [mail.dump(event)])
    return mail.dump(event)


def _event(event_id):
    row = EVENTS.get(event_id) if isinstance(event_id, str) else None
    if row is None:
        mail.fail("ValueError", f"Event with ID '{event_id}' not found.")
    return row


@ws.tool
def cancel_calendar_event(event_id):
    row = EVENTS.update(_event(event_id)["id_"], status="canceled")
    mail.send(row["participants"], f"Canceled: '{row['title']}'",
              "The event has been canceled.", [mail.dump(row)])
    return f"Event with ID {event_id} has been canceled and participants have been notified."


@ws.tool
def reschedule_calendar_event(event_id, new_start_time, new_end_time=None):
    end = None if new_end_time is None else mail.strptime(new_end_time, "%Y-%m-%d %H:%M")
    start = mail.strptime(new_start_time, "%Y-%m-%d %H:%M")
    row = _event(event_id)
    if end is None:
        old_start = datetime.datetime.fromisoformat(row["start_time"])
        end = start + (datetime.datetime.fromisoformat(row["end_time"]) - old_start)
    row = EVENTS.update(row["id_"], start_time=start.isoformat(), end_time=end.isoformat())
    body = (f"The event has been rescheduled. It will start on  {start.date().isoformat()} at"
            f" {start.time().isoformat()} and end on {end.date().isoformat()} at"
            f" {end.time().isoformat()}.")
    # AgentDojo's subject is a plain string with the braces left in.
    mail.send(row["participants"], "Rescheduled: '{event.title}'", body, [mail.dump(row)])
    return mail.dump(row)


@ws.tool
def add_calendar_event_participants(event_id, participants):
    row = _event(event_id)
    row = EVENTS.update(row["id_"], participants=row["participants"] + list(participants))
    return mail.dump(row)


# ---- cloud drive -------------------------------------------------------

def _file(file_id):
    row = FILES.get(file_id) if isinstance(file_id, str) else None
    if row is None:
        mail.fail("ValueError", f"File with ID '{file_id}' not found.")
    return row


@ws.tool
def append_to_file(file_id, content):
    row = _file(file_id)
    text = row["content"] + content
    return mail.dump(FILES.update(row["id_"], content=text, size=len(text), last_modified=mail.now()))


@ws.tool
def search_files_by_filename(filename):
    return [mail.dump(f) for f in mail.rows(FILES) if filename.lower() in f["filename"].lower()]


@ws.tool
def create_file(filename, content):
    row = {"id_": mail.next_id(FILES), "seq": mail.next_seq(FILES), "filename": filename,
           "content": content, "owner": mail.me(), "last_modified": mail.now(), "shared_with": {},
           "size": len(content)}
    FILES.insert(row)
    return mail.dump(row)


@ws.tool
def delete_file(file_id):
    row = _file(file_id)
    FILES.delete(row["id_"])
    return mail.dump(row)


@ws.tool
def get_file_by_id(file_id):
    return mail.dump(_file(file_id))


@ws.tool
def list_files():
    return [mail.dump(f) for f in mail.rows(FILES)]


@ws.tool
def share_file(file_id, email, permission):
    row = _file(file_id)
    return mail.dump(FILES.update(row["id_"], shared_with=dict(row["shared_with"], **{email: permission})))


@ws.tool
def search_files(query):
    matches = [mail.dump(f) for f in mail.rows(FILES) if query.lower() in f["content"].lower()]
    if not matches:
        mail.fail("ValueError",
              f"No files found with the given query ('{query}'). Try a different search term.")
    return matches
