"""The `booking` world's service (worlds/booking/v1), in Python: flight
search with a join and date arithmetic, booking with fare and balance
arithmetic and validation errors, changes and cancellations with refund
rules; one call writes several tables; ids from a scheme (BK-0001)."""

from datetime import date, datetime, timedelta

import worldline_service as ws

FLIGHTS = ws.Table("flights")
AIRPORTS = ws.Table("airports")
CUSTOMERS = ws.Table("customers")
BOOKINGS = ws.Table("bookings")
PAYMENTS = ws.Table("payments")

CHANGE_FEE = 2500  # cents


def _dt(text):
    return datetime.fromisoformat(text[:19])


def _next_id(prefix, rows):
    n = max([int(r["id"].split("-")[1]) for r in rows if r["id"].startswith(prefix + "-")] or [0])
    return f"{prefix}-{n + 1:04d}"


def _flight_view(f):
    a, b = AIRPORTS.require(f["from"]), AIRPORTS.require(f["to"])
    return {
        "id": f["id"], "from": f["from"], "to": f["to"],
        "from_city": a["city"], "to_city": b["city"],
        "depart": f["depart"], "fare": f["fare"] / 100, "seats": f["seats"],
    }


@ws.tool
def search_flights(origin, destination, day, flex_days=0):
    """Flights origin -> destination departing on `day` or up to `flex_days`
    later, with seats left, cheapest first (then earliest)."""
    try:
        first = date.fromisoformat(day)
    except ValueError:
        raise ws.InvalidArgs(f"day `{day}` is not YYYY-MM-DD") from None
    days = {(first + timedelta(days=i)).isoformat() for i in range(flex_days + 1)}
    found = [f for f in FLIGHTS.query(**{"from": origin, "to": destination})
             if f["depart"][:10] in days and f["seats"] > 0 and f["depart"] > ws.now()]
    found.sort(key=lambda f: (f["fare"], f["depart"]))
    return [_flight_view(f) for f in found]


def _charge(customer, amount, booking, kind):
    c = CUSTOMERS.require(customer)
    if kind == "charge" and amount > c["balance"]:
        raise ws.Conflict(
            f"insufficient balance: {customer} has {c['balance'] / 100:.2f}, needs {amount / 100:.2f}")
    sign = -1 if kind == "charge" else 1
    CUSTOMERS.update(customer, balance=c["balance"] + sign * amount)
    PAYMENTS.insert({"id": _next_id("PM", PAYMENTS.query()), "booking": booking,
                     "customer": customer, "kind": kind, "amount": amount, "at": ws.now()})


@ws.tool
def book(customer, flight, passengers):
    if passengers < 1:
        raise ws.InvalidArgs("at least one passenger")
    f = FLIGHTS.require(flight)
    CUSTOMERS.require(customer)
    if f["depart"] <= ws.now():
        raise ws.Conflict(f"{flight} has already departed")
    if f["seats"] < passengers:
        raise ws.Conflict(f"{flight} has {f['seats']} seats left, not {passengers}")
    total = f["fare"] * passengers
    bid = _next_id("BK", BOOKINGS.query())
    _charge(customer, total, bid, "charge")
    FLIGHTS.update(flight, seats=f["seats"] - passengers)
    BOOKINGS.insert({"id": bid, "customer": customer, "flight": flight, "passengers": passengers,
                     "paid": total, "status": "confirmed", "created_at": ws.now()})
    return {"booking": bid, "flight": flight, "passengers": passengers, "paid": total / 100}


def _refund_share(depart):
    """Full refund 7 days or more before departure, half from 1 to 7
    days, nothing in the last day."""
    left = _dt(depart) - _dt(ws.now())
    if left >= timedelta(days=7):
        return 1.0
    if left >= timedelta(days=1):
        return 0.5
    return 0.0


@ws.tool
def cancel_booking(booking):
    b = BOOKINGS.require(booking)
    if b["status"] != "confirmed":
        raise ws.Conflict(f"{booking} is {b['status']}")
    f = FLIGHTS.require(b["flight"])
    refund = round(b["paid"] * _refund_share(f["depart"]))
    FLIGHTS.update(f["id"], seats=f["seats"] + b["passengers"])
    BOOKINGS.update(booking, status="cancelled", refunded=refund)
    if refund:
        _charge(b["customer"], refund, booking, "refund")
    return {"booking": booking, "status": "cancelled", "refund": refund / 100}


@ws.tool
def change_booking(booking, flight):
    b = BOOKINGS.require(booking)
    if b["status"] != "confirmed":
        raise ws.Conflict(f"{booking} is {b['status']}")
    old, new = FLIGHTS.require(b["flight"]), FLIGHTS.require(flight)
    if (old["from"], old["to"]) != (new["from"], new["to"]):
        raise ws.InvalidArgs(f"{flight} does not fly {old['from']} -> {old['to']}")
    if new["seats"] < b["passengers"]:
        raise ws.Conflict(f"{flight} has {new['seats']} seats left")
    total = new["fare"] * b["passengers"]
    difference = total + CHANGE_FEE - b["paid"]
    if difference > 0:
        _charge(b["customer"], difference, booking, "charge")
    elif difference < 0:
        _charge(b["customer"], -difference, booking, "refund")
    FLIGHTS.update(old["id"], seats=old["seats"] + b["passengers"])
    FLIGHTS.update(flight, seats=new["seats"] - b["passengers"])
    BOOKINGS.update(booking, flight=flight, paid=total)
    return {"booking": booking, "flight": flight, "difference": difference / 100}
