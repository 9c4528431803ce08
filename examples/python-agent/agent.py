"""A careful agent for the `incident` and `support` worlds, in Python.

It does what the Rust careful agent (examples/careful-agent) does there:
find the deploy behind an alert, roll it back, close the incident ticket,
and leave exactly one incident note. What "careful" means:
- a list that says it is old (`as_of` more than two minutes before the
  clock) is read again, and the record it leads to is checked with the
  fresh `get_*` tool;
- a read that times out (or whose service is unavailable) is retried once;
- a write that fails is never repeated blindly: the agent first looks
  whether it landed anyway (notes are not idempotent);
- a denied call is not repeated, and nothing else is tried in its place;
- every decision leaves a trace note;
- with a customer (`support`): it asks for the order when none is named,
  confirms the exact action before any refund or cancellation (and follows
  the customer when they change their mind), asks a supervisor before a
  refund over the limit, and tells the customer what really happened.

Build: `worldline build-python examples/python-agent/agent.py`.
"""

# Why the language examples port the careful agent (was decision 0036): on the
# incident cases this agent and examples/ts-agent/agent.ts make the same tool
# calls with the same arguments, leave the same trace notes and return the
# same output as examples/careful-agent (a test compares their tool calls;
# only virtual timestamps differ, because CPython and StarlingMonkey make more
# host calls at start-up before `run`). One behaviour in three languages shows
# the SDKs are equivalent and makes a difference between them a bug a test can
# see; language-specific examples would leave nothing to compare.

import json
import re
import time
from datetime import datetime, timezone

import worldline_guest as wl
from worldline_guest import approval, tools, trace, user

AUTHOR = "careful-agent"
MAX_AGE_S = 120
"""How old a list may be before it is read again."""


# --- helpers: time, reads with one retry, checked writes -------------------


def parse_ts(text):
    """Seconds since the Unix epoch of `YYYY-MM-DDTHH:MM:SS[.frac]Z`, or None."""
    if not isinstance(text, str) or len(text) < 20 or text[4] != "-" or text[10] != "T":
        return None
    if not text.endswith("Z"):
        return None
    try:
        fields = [int(text[a:b]) for a, b in ((0, 4), (5, 7), (8, 10), (11, 13), (14, 16), (17, 19))]
        at = datetime(*fields, tzinfo=timezone.utc)
    except ValueError:
        return None
    return int(at.timestamp())


def ts(row, field):
    """The timestamp `field` of a row, in seconds (0 when absent)."""
    return parse_ts(row.get(field)) or 0


def is_stale(answer):
    """True when a wrapped list's `as_of` is too old (or missing)."""
    as_of = parse_ts(answer.get("as_of"))
    return as_of is None or int(time.time()) - as_of > MAX_AGE_S


def read(name, **args):
    """A read: retried once when it times out or the service is unavailable."""
    try:
        return tools.call(name, **args)
    except (wl.Timeout, wl.Unavailable) as e:
        trace.note("retry", f"{name} failed ({e}); reads are safe to retry once")
        return tools.call(name, **args)


class Wrote:
    """How a write ended: done, landed (reply lost, checked), denied, failed."""

    LABELS = {
        "done": "done",
        "landed": "done (reply lost, checked)",
        "denied": "denied",
        "failed": "failed",
    }

    def __init__(self, how, row=None, error=None):
        self.how, self.row, self.error = how, row, error

    def ok(self):
        return self.how in ("done", "landed")

    def label(self):
        return self.LABELS[self.how]


def write(name, args, landed):
    """A write that is never repeated blindly. After a failure, `landed()`
    looks at the world (with a read) to see whether the change is there
    anyway; only when it is not is the write tried once more."""
    for attempt in (1, 2):
        try:
            return Wrote("done", row=tools.call(name, args))
        except wl.Denied as e:
            trace.note("denied", f"{name} was denied ({e}); not repeating it")
            return Wrote("denied")
        except wl.Error as e:
            trace.note("check", f"{name} failed ({e}); checking whether it landed")
            if landed():
                trace.note("check", f"{name} landed despite the error; not repeating it")
                return Wrote("landed")
            if attempt == 2 or isinstance(e, (wl.InvalidArgs, wl.NotFound)):
                return Wrote("failed", error=str(e))
            trace.note("retry", f"{name} did not land; trying once more")


def holds(check):
    """Whether a check made of reads is true; a failed read means no."""
    try:
        return bool(check())
    except wl.Error:
        return False


def merge_newest_first(rows, extra, field):
    """The rows plus `extra` (if not already there), newest first by `field`."""
    if extra is not None:
        rows = [r for r in rows if r.get("id") != extra.get("id")] + [extra]
    return sorted(rows, key=lambda r: ts(r, field), reverse=True)


# --- the incident world -----------------------------------------------------


def fresh_deploys(service):
    """Deploys of `service`, newest first, no older than MAX_AGE_S. A stale
    list is read again; if it is still stale, the service's current deploy
    (read fresh) is added to what the list shows."""
    answer = read("list_deploys", service=service)
    if is_stale(answer):
        trace.note("stale", f"deploy list is as of {answer.get('as_of', '?')}; reading it again")
        answer = read("list_deploys", service=service)
    rows = list(answer.get("deploys") or [])
    if not is_stale(answer):
        return rows
    trace.note(
        "stale",
        f"deploy list still as of {answer.get('as_of', '?')}; asking the service what runs now",
    )
    svc = read("get_service", id=service)
    current = svc.get("current_deploy")
    extra = read("get_deploy", id=current) if isinstance(current, str) else None
    return merge_newest_first(rows, extra, "at")


def add_note(incident, text):
    """Add the one incident note; after a failure, look before writing again."""
    args = {"incident": incident, "text": text, "author": AUTHOR}
    return write(
        "add_incident_note",
        args,
        lambda: holds(lambda: has_note(tools.call("list_incident_notes", incident=incident), text)),
    )


def has_note(notes, text):
    """Whether a list of notes holds one with `text`."""
    return isinstance(notes, list) and any(isinstance(n, dict) and n.get("text") == text for n in notes)


def escalate(alert_id, ticket_id, text):
    note = add_note(ticket_id, text)
    return {
        "world": "incident",
        "alert": alert_id,
        "ticket": ticket_id,
        "cause_deploy": None,
        "action": "escalated",
        "note": note.label(),
    }


def incident(task):
    alert_id = task.get("alert") or ""
    ticket_id = task.get("ticket") or ""

    try:
        alert = read("get_alert", id=alert_id)
    except wl.Error as e:
        # Without the alert there is no service and no time: acting now
        # would be guessing. Say so on the incident and stop.
        trace.note("decision", f"cannot read {alert_id} ({e}); escalating, no action")
        return escalate(
            alert_id,
            ticket_id,
            f"Could not read {alert_id} after one retry ({e}). No rollback done; escalating to a human.",
        )
    service = alert.get("service") or ""
    alert_at = ts(alert, "at")

    deploys = fresh_deploys(service)
    cause = next((d for d in deploys if ts(d, "at") <= alert_at), None)
    if cause is None:
        trace.note("decision", f"no deploy of {service} before the alert; escalating")
        return escalate(
            alert_id,
            ticket_id,
            f"{alert_id}: no deploy of {service} precedes the alert; escalating.",
        )
    cause_id = cause.get("id") or ""
    # The list may lag; the deploy record itself is the source of truth.
    fresh = read("get_deploy", id=cause_id)
    trace.note(
        "decision",
        f"{cause_id} ({service} {json.dumps(fresh.get('version'))}) at {json.dumps(fresh.get('at'))}"
        f" is the last deploy before {alert_id} at {json.dumps(alert.get('at'))}",
    )

    if fresh.get("status") == "rolled_back":
        trace.note("decision", f"{cause_id} is already rolled back")
        rollback = Wrote("landed")
    else:
        reason = f"{alert_id}: {alert.get('summary') or 'alert'}"
        rollback = write(
            "rollback_deploy",
            {"id": cause_id, "reason": reason},
            lambda: holds(lambda: tools.call("get_deploy", id=cause_id).get("status") == "rolled_back"),
        )

    ticket = read("get_ticket", id=ticket_id)
    close = None
    if not rollback.ok():
        trace.note("decision", "rollback not done: the ticket stays open")
    elif ticket.get("status") == "open":
        close = write(
            "close_ticket",
            {"id": ticket_id},
            lambda: holds(lambda: tools.call("get_ticket", id=ticket_id).get("status") == "closed"),
        )
    if close is not None and close.ok():
        ticket_status = "closed"
    else:
        ticket_status = ticket.get("status") or "open"

    text = (
        f"{alert_id} ({service} {alert.get('kind') or 'alert'} at {alert.get('at') or '?'}):"
        f" caused by {cause_id} ({service} {fresh.get('version') or '?'} at {fresh.get('at') or '?'},"
        f' "{fresh.get("change") or ""}"). Rollback of {cause_id}: {rollback.label()}.'
    )
    if close is None:
        text += f" {ticket_id} left {ticket_status}."
    elif close.how == "denied":
        text += f" Closing {ticket_id} was denied; it stays open for a human."
    else:
        text += f" Closing {ticket_id}: {close.label()}."
    note = add_note(ticket_id, text)

    return {
        "world": "incident",
        "alert": alert_id,
        "ticket": ticket_id,
        "service": service,
        "cause_deploy": cause_id,
        "action": "rolled_back" if rollback.ok() else "rollback_failed",
        "ticket_status": ticket_status,
        "close": close.label() if close is not None else None,
        "note": note.label(),
    }


# --- support: a conversation with a customer --------------------------------

APPROVAL_LIMIT = 100
ASKS = 3
DONE = {"refund": "refunded", "cancel": "cancelled"}


def intent_of(text):
    t = text.lower()
    if "cancel" in t:
        return "cancel"
    if any(w in t for w in ("refund", "money back", "return")):
        return "refund"
    return None


def order_in(text):
    """An order number in a message (`A-1001`: a capital, a dash, digits)."""
    for word in re.split(r"[^A-Za-z0-9-]", text):
        if re.fullmatch(r"[A-Z]-[0-9]+", word):
            return word
    return None


def answer_of(reply):
    t = " " + re.sub(r"[,.!]", " ", reply.lower()) + " "
    if any(w in t for w in (" no ", " don't ", " do not ", " keep ", "changed my mind", " not ")):
        return "no"
    if any(w in t for w in (" yes ", " sure ", " go ahead ", " please do ", " ok ", " okay ", " yep ")):
        return "yes"
    return "unclear"


def say(message):
    """Say something; the reply, or None when the customer has left."""
    turn = user.say(message)
    if isinstance(turn, user.Ended):
        trace.note("conversation", f"the customer left: {turn.reason}")
        return None
    return turn.text


def support(task):
    customer = task.get("customer")
    first = task.get("message") or ""
    intent, order_id = intent_of(first), order_in(first)

    def outcome(action):
        return {"world": "support", "order": order_id or "", "action": action}

    for _ in range(ASKS):
        if order_id:
            break
        reply = say("Which order is it about? Please give me the order number (it looks like A-1001).")
        if reply is None:
            return outcome("none")
        order_id, intent = order_in(reply), intent or intent_of(reply)
    if not order_id:
        say("Without an order number I can't look it up; nothing was changed.")
        return outcome("none")
    if intent is None:
        say("I'm sorry, I can only help with refunds and cancellations; nothing was changed.")
        return outcome("none")
    try:
        order = read("get_order", id=order_id)
    except wl.Error:
        order = {}
    if order.get("customer") != customer:
        say(f"I can't find order {order_id} on your account; nothing was changed.")
        return outcome("none")
    amount, item = order.get("amount", 0), order.get("item", "?")

    confirmed, preface = False, ""
    for _ in range(ASKS):
        if intent == "cancel" and order.get("status") != "processing":
            preface = (
                f"Order {order_id} has already been {order.get('status')}, so it can't be cancelled;"
                " I can refund it instead. "
            )
            intent = "refund"
        reply = say(
            f"{preface}To confirm: shall I {intent} order {order_id} ({item}, {amount})? Please answer yes or no."
        )
        preface = ""
        if reply is None:
            return outcome("none")
        other = intent_of(reply)
        if other is not None and other != intent:
            trace.note("conversation", f"the customer changed their mind: {other} instead")
            intent = other
            continue
        answer = answer_of(reply)
        if answer == "yes":
            confirmed = True
            break
        if answer == "no":
            say(f"Alright, I won't {intent} order {order_id}. Nothing was changed.")
            return outcome("none")
    if not confirmed:
        say("I'll leave the order as it is until you confirm. Nothing was changed.")
        return outcome("none")
    if intent == "refund" and amount > APPROVAL_LIMIT:
        decision = approval.request("refund", order=order_id, amount=amount)
        if not decision:
            say(
                f"I'm sorry: a supervisor declined the refund of order {order_id} ({decision.reason})."
                " Nothing was changed."
            )
            return outcome("approval_denied")
    try:
        tools.call(f"{intent}_order", id=order_id)
    except wl.Error as e:
        say(f"I couldn't {intent} order {order_id}: {e.message}. Nothing was changed.")
        return outcome("failed")
    say(f"Done: order {order_id} is {DONE[intent]}. Is there anything else I can help with?")
    return outcome(DONE[intent])


@wl.agent
def run(task):
    if "message" in task:
        return support(task)
    if "alert" in task:
        return incident(task)
    raise wl.Failed("task names no `alert` (incident) or `message` (support)")
