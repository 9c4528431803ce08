"""AgentDojo's banking suite's tools (agentdojo==0.1.35,
default_suites/v1/tools/banking_client.py, file_reader.py,
user_account.py) as a worldline world service: the same names,
arguments, semantics and error texts (`TypeName: message`, as AgentDojo's
FunctionsRuntime writes a raised exception), over the tables
`bank_account`, `transactions`, `scheduled_transactions`, `files` and
`user_account` (the suite's environment.yaml, its injection vectors kept
as `{placeholders}` that the mediator fills). Written by `worldline bench
import agentdojo/banking`; ported by hand (decision 0374)."""

import worldline_service as ws

ACCOUNT = ws.Table("bank_account")
TRANSACTIONS = ws.Table("transactions")
SCHEDULED = ws.Table("scheduled_transactions")
FILES = ws.Table("files")
USER = ws.Table("user_account")


def _float(name, v):
    """pydantic's lax float: a number, or text that reads as one."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise ws.ToolError(f"ValidationError: {name}: Input should be a valid number")
    try:
        return float(v)
    except ValueError:
        raise ws.ToolError(
            f"ValidationError: {name}: Input should be a valid number, unable to parse string as a number"
        ) from None


def _account():
    return ACCOUNT.require("bank_account")


def _next_id():
    ids = [t["id"] for t in TRANSACTIONS.query()] + [t["id"] for t in SCHEDULED.query()]
    return max(ids, default=0) + 1


def _transaction(recipient, amount, subject, date, recurring):
    return {
        "id": _next_id(),
        "sender": _account()["iban"],
        "recipient": recipient,
        "amount": _float("amount", amount),
        "subject": subject,
        "date": date,
        "recurring": recurring,
    }


@ws.tool
def get_iban():
    return _account()["iban"]


@ws.tool
def send_money(recipient, amount, subject, date):
    TRANSACTIONS.insert(_transaction(recipient, amount, subject, date, False))
    return {"message": f"Transaction to {recipient} for {_float('amount', amount)} sent."}


@ws.tool
def schedule_transaction(recipient, amount, subject, date, recurring):
    SCHEDULED.insert(_transaction(recipient, amount, subject, date, recurring))
    return {"message": f"Transaction to {recipient} for {_float('amount', amount)} scheduled."}


@ws.tool
def update_scheduled_transaction(id, recipient=None, amount=None, subject=None, date=None,
                                 recurring=None):
    # AgentDojo sets a field only when the new value is truthy, and without
    # validation (an amount given as 1200 stays 1200).
    found = next((t for t in SCHEDULED.query() if t["id"] == id), None)
    if found is None:
        raise ws.ToolError(f"ValueError: Transaction with ID {id} not found.")
    fields = {k: v for k, v in [("recipient", recipient), ("amount", amount),
                                ("subject", subject), ("date", date),
                                ("recurring", recurring)] if v}
    if fields:
        SCHEDULED.update(str(found["id"]), **fields)
    return {"message": f"Transaction with ID {id} updated."}


@ws.tool
def get_balance():
    return _account()["balance"]


@ws.tool
def get_most_recent_transactions(n=100):
    rows = TRANSACTIONS.query()
    return rows[-int(n):]


@ws.tool
def get_scheduled_transactions():
    return SCHEDULED.query()


@ws.tool
def read_file(file_path):
    row = FILES.get(file_path) if isinstance(file_path, str) else None
    return row["content"] if row else ""


def _user():
    return USER.require("user_account")


def _info(u):
    return {k: u[k] for k in ("first_name", "last_name", "street", "city")}


@ws.tool
def get_user_info():
    return _info(_user())


@ws.tool
def update_password(password):
    USER.update("user_account", password=password)
    return {"message": "Password updated."}


@ws.tool
def update_user_info(first_name=None, last_name=None, street=None, city=None):
    fields = {k: v for k, v in [("first_name", first_name), ("last_name", last_name),
                                ("street", street), ("city", city)] if v}
    u = USER.update("user_account", **fields) if fields else _user()
    return _info(u)
