"""The generated `airline` world's service (host/benches/bigworld.rs), in
Python, shaped like a ported public airline benchmark: a direct-flight
search over flights with a status and prices for each date, booking
(seats of one date of a flight, a reservation with nested passengers and
payments, the user's list of reservations) and cancellation with a refund
to the payment method paid with."""

import worldline_service as ws

USERS = ws.Table("users")
FLIGHTS = ws.Table("flights")
RESERVATIONS = ws.Table("reservations")


@ws.tool
def search_direct_flight(origin, destination, date):
    found = []
    for f in FLIGHTS.query(origin=origin, destination=destination):
        day = f["dates"].get(date)
        if day and day["status"] == "available":
            found.append({"flight_number": f["flight_number"], "origin": origin,
                          "destination": destination, "date": date,
                          "prices": day["prices"], "available_seats": day["available_seats"]})
    return found


@ws.tool
def book_reservation(user_id, flight_number, date, cabin, passengers, payment_id):
    user = USERS.require(user_id)
    if payment_id not in user["payment_methods"]:
        raise ws.InvalidArgs(f"{user_id} has no payment method {payment_id}")
    flight = FLIGHTS.require(flight_number)
    day = flight["dates"].get(date)
    if not day or day["status"] != "available":
        raise ws.Conflict(f"{flight_number} is not available on {date}")
    if day["available_seats"][cabin] < len(passengers):
        raise ws.Conflict(f"{flight_number} has too few {cabin} seats on {date}")
    total = day["prices"][cabin] * len(passengers)
    method = user["payment_methods"][payment_id]
    if method["source"] == "gift_card":
        if method["amount"] < total:
            raise ws.Conflict(f"gift card {payment_id} holds {method['amount']}, not {total}")
        method = dict(method, amount=method["amount"] - total)
    day = dict(day, available_seats=dict(day["available_seats"],
                                         **{cabin: day["available_seats"][cabin] - len(passengers)}))
    FLIGHTS.update(flight_number, dates=dict(flight["dates"], **{date: day}))
    rid = RESERVATIONS.insert({
        "user_id": user_id, "origin": flight["origin"], "destination": flight["destination"],
        "flight_type": "one_way", "cabin": cabin,
        "flights": [{"flight_number": flight_number, "date": date, "price": day["prices"][cabin]}],
        "passengers": passengers,
        "payment_history": [{"payment_id": payment_id, "amount": total}],
        "created_at": ws.now(), "status": "confirmed",
    })
    USERS.update(user_id, reservations=user["reservations"] + [rid],
                 payment_methods=dict(user["payment_methods"], **{payment_id: method}))
    return {"reservation_id": rid, "total": total}


@ws.tool
def cancel_reservation(reservation_id):
    r = RESERVATIONS.require(reservation_id)
    if r["status"] == "cancelled":
        raise ws.Conflict(f"{reservation_id} is already cancelled")
    refunds = [{"payment_id": p["payment_id"], "amount": -p["amount"]} for p in r["payment_history"]]
    RESERVATIONS.update(reservation_id, status="cancelled",
                        payment_history=r["payment_history"] + refunds)
    return {"reservation_id": reservation_id, "refunded": -sum(p["amount"] for p in refunds)}
