"""AgentDojo's travel suite's tools (agentdojo==0.1.35,
default_suites/v1/tools/travel_booking_client.py, and the
calendar_client.py and email_client.py functions the suite lists) as a
worldline world service: the same names, arguments, semantics and error
texts (`TypeName: message`, as AgentDojo's FunctionsRuntime writes a raised
exception), over the tables `user` and `reservation` (one row each),
`hotels`, `restaurants`, `car_rental` and `flights` (a row per list item,
keyed by its place in the list), `events` and `emails` (a row per calendar
event and email, with `seq` the order AgentDojo's dicts keep) and
`account` (the calendar's address and current day). A timestamp AgentDojo
takes from `datetime.now()` is the world's clock here; the email and
calendar helpers it shares with the workspace port are in
`agentdojo_mail.py`, beside it. Written by `worldline bench import
agentdojo/travel`; ported by hand (decisions 0374, 0375)."""

import datetime

import agentdojo_mail as mail
import worldline_service as ws

USER = ws.Table("user")
HOTELS = ws.Table("hotels")
RESTAURANTS = ws.Table("restaurants")
CARS = ws.Table("car_rental")
FLIGHTS = ws.Table("flights")
RESERVATION = ws.Table("reservation")
EVENTS = ws.Table("events")


def _num(v):
    """A float field as pydantic keeps it (`120` in the YAML is `120.0`)."""
    return float(v)


def _names(v):
    """`x in names` as AgentDojo tests it: membership in a list, a
    substring of a text."""
    return v if isinstance(v, (list, str)) else []


# ---- user ---------------------------------------------------------------

def _user_info():
    u = USER.require("user")
    return {
        "First Name": u["first_name"],
        "Last Name": u["last_name"],
        "ID Number": u["ID_number"],
        "Email": u["email"],
        "Phone Number": u["phone_number"],
        "Address": u["address"],
        "Passport Number": u["passport_number"],
        "Bank Account Number": u["bank_account_number"],
        "Credit Card Number": u["credit_card_number"],
    }


@ws.tool
def get_user_information():
    return _user_info()


# ---- hotels -------------------------------------------------------------

@ws.tool
def get_all_hotels_in_city(city):
    names = [h["name"] for h in HOTELS.query() if h["city"] == city]
    return "Hotel Names: " + "\n".join(names) + "\n"


@ws.tool
def get_hotels_prices(hotel_names):
    names = _names(hotel_names)
    return {h["name"]: f"Price range: {_num(h['price_min'])} - {_num(h['price_max'])}"
            for h in HOTELS.query() if h["name"] in names}


@ws.tool
def get_hotels_address(hotel_name):
    return {h["name"]: h["address"] for h in HOTELS.query() if h["name"] == hotel_name}


def _rating_reviews(r):
    return "Rating: " + str(_num(r["rating"])) + "\n" + "Reviews: " + "\n".join(r["reviews"])


@ws.tool
def get_rating_reviews_for_hotels(hotel_names):
    names = _names(hotel_names)
    return {h["name"]: _rating_reviews(h) for h in HOTELS.query() if h["name"] in names}


# ---- restaurants --------------------------------------------------------

@ws.tool
def get_all_restaurants_in_city(city):
    names = [r["name"] for r in RESTAURANTS.query() if r["city"] == city]
    return "Restaurant in " + city + ": " + "\n".join(names) + "\n"


def _restaurants(restaurant_names, field, convert=lambda v: v):
    names = _names(restaurant_names)
    return {r["name"]: convert(r[field]) for r in RESTAURANTS.query() if r["name"] in names}


@ws.tool
def get_restaurants_address(restaurant_names):
    return _restaurants(restaurant_names, "address")


@ws.tool
def get_rating_reviews_for_restaurants(restaurant_names):
    names = _names(restaurant_names)
    return {r["name"]: _rating_reviews(r) for r in RESTAURANTS.query() if r["name"] in names}


@ws.tool
def get_cuisine_type_for_restaurants(restaurant_names):
    return _restaurants(restaurant_names, "cuisine_type")


@ws.tool
def get_dietary_restrictions_for_all_restaurants(restaurant_names):
    # AgentDojo joins the names and tests each restaurant's name as a
    # substring of the joined text.
    joined = ", ".join(restaurant_names)
    return {r["name"]: r["dietary_restrictions"] for r in RESTAURANTS.query()
            if r["name"] in joined}


@ws.tool
def get_contact_information_for_restaurants(restaurant_names):
    return _restaurants(restaurant_names, "contact_information")


@ws.tool
def get_price_for_restaurants(restaurant_names):
    return _restaurants(restaurant_names, "price_per_person", _num)


@ws.tool
def check_restaurant_opening_hours(restaurant_names):
    return _restaurants(restaurant_names, "operating_hours")


# ---- car rental ---------------------------------------------------------

@ws.tool
def get_all_car_rental_companies_in_city(city):
    names = [c["name"] for c in CARS.query() if c["city"] == city]
    return "Car Rental Companies in " + city + ": " + "\n".join(names) + "\n"


def _companies(company_name, field, convert=lambda v: v):
    names = _names(company_name)
    return {c["name"]: convert(c[field]) for c in CARS.query() if c["name"] in names}


@ws.tool
def get_car_types_available(company_name):
    return _companies(company_name, "car_types_available")


@ws.tool
def get_rating_reviews_for_car_rental(company_name):
    names = _names(company_name)
    return {c["name"]: _rating_reviews(c) for c in CARS.query() if c["name"] in names}


@ws.tool
def get_car_rental_address(company_name):
    return _companies(company_name, "address")


@ws.tool
def get_car_fuel_options(company_name):
    return _companies(company_name, "fuel_options")


@ws.tool
def get_car_price_per_day(company_name):
    return _companies(company_name, "price_per_day", _num)


# ---- reservations -------------------------------------------------------

def _fromisoformat(text):
    if not isinstance(text, str):
        mail.fail("TypeError", "fromisoformat: argument must be str")
    try:
        return datetime.datetime.fromisoformat(text)
    except ValueError as e:
        mail.fail("ValueError", str(e))


def _reserve(kind, title, start, end):
    # AgentDojo assigns the fields one by one and a bad date fails after
    # the ones before it were set; a service call that fails writes
    # nothing, so the dates are parsed before anything is written.
    RESERVATION.update("reservation", contact_information=_user_info()["Phone Number"],
                       reservation_type=kind, title=title, start_time=start.isoformat(),
                       end_time=end.isoformat())


@ws.tool
def reserve_hotel(hotel, start_day, end_day):
    _reserve("hotel", hotel, _fromisoformat(start_day), _fromisoformat(end_day))
    return f"Reservation for {hotel} from {start_day} to {end_day} has been made successfully."


@ws.tool
def reserve_restaurant(restaurant, start_time):
    start = _fromisoformat(start_time)
    end = start + datetime.timedelta(hours=2)
    _reserve("restaurant", restaurant, start, end)
    return (f"Reservation for {restaurant} from {start.hour:02d}:{start.minute:02d} to "
            f"{end.hour:02d}:{end.minute:02d} on {start.date().isoformat()} has been made"
            " successfully.")


@ws.tool
def reserve_car_rental(company, start_time, end_time):
    # AgentDojo sets the end to the start time.
    start = _fromisoformat(start_time)
    _reserve("car", company, start, start)
    return (f"Reservation for a car at {company} from {start_time} to {end_time} has been made"
            " successfully.")


# ---- flights ------------------------------------------------------------

@ws.tool
def get_flight_information(departure_city, arrival_city):
    return "\n".join(
        f"Airline: {f['airline']}, Flight Number: {f['flight_number']}, Departure Time: "
        f"{datetime.datetime.fromisoformat(f['departure_time'])}, Arrival Time: "
        f"{datetime.datetime.fromisoformat(f['arrival_time'])}, Price: {_num(f['price'])}, "
        f"Contact Information: {f['contact_information']}"
        for f in FLIGHTS.query()
        if f["departure_city"] == departure_city and f["arrival_city"] == arrival_city)


# ---- calendar and email -------------------------------------------------

@ws.tool
def create_calendar_event(title, start_time, end_time, description="", participants=None,
                          location=None):
    start = mail.strptime(start_time, "%Y-%m-%d %H:%M")
    end = mail.strptime(end_time, "%Y-%m-%d %H:%M")
    # AgentDojo appends the owner to the list it was given (the invitation
    # goes to that list) and keeps the event's participants as a set; the
    # port keeps them in the order of first occurrence.
    invited = list(participants or []) + [mail.me()]
    event = {"id_": mail.next_id(EVENTS), "seq": mail.next_seq(EVENTS), "title": title,
             "description": description, "start_time": start.isoformat(),
             "end_time": end.isoformat(), "location": location,
             "participants": list(dict.fromkeys(invited)), "all_day": False,
             "status": "confirmed"}
    EVENTS.insert(event)
    mail.send(invited, f"Invitation: {title}", description, [mail.dump(event)])
    return mail.dump(event)


@ws.tool
def search_calendar_events(query, date=None):
    day = mail.strptime(date, "%Y-%m-%d").date().isoformat() if date is not None else None
    q = query.lower()
    found = [mail.dump(e) for e in mail.rows(EVENTS)
             if (day is None or e["start_time"][:10] == day)
             and (q in e["title"].lower() or q in e["description"].lower())]
    if not found:
        mail.fail("ValueError", "No events found. Try with a different query.")
    return found


@ws.tool
def get_day_calendar_events(day):
    d = mail.strptime(day, "%Y-%m-%d").date().isoformat()
    return [mail.dump(e) for e in mail.rows(EVENTS) if e["start_time"][:10] == d]


@ws.tool
def cancel_calendar_event(event_id):
    event = EVENTS.get(event_id) if isinstance(event_id, str) else None
    if event is None:
        mail.fail("ValueError", f"Event with ID '{event_id}' not found.")
    event = EVENTS.update(event_id, status="canceled")
    mail.send(event["participants"], f"Canceled: '{event['title']}'",
              "The event has been canceled.", [mail.dump(event)])
    return f"Event with ID {event_id} has been canceled and participants have been notified."


@ws.tool
def send_email(recipients, subject, body, attachments=None, cc=None, bcc=None):
    return mail.send(recipients, subject, body, mail.attachments(attachments), cc, bcc)
