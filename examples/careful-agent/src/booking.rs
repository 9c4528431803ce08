//! The `booking` world: book the cheapest flight that fits, once; cancel;
//! change to the cheapest fitting flight of another day. Before booking,
//! the agent looks (in a fresh list) whether the customer already holds a
//! booking on that route and day; a booking whose reply is lost is
//! checked before it is tried again; a refusal is never retried.

use crate::common::{call, is_stale, read, text};
use serde_json::{Value, json};
use worldline_guest::{Error, ErrorKind, trace};

pub fn run(task: &Value) -> Result<Value, Error> {
    if let Some(b) = task.get("book") {
        book(b)
    } else if let Some(c) = task.get("cancel_booking") {
        cancel(text(&c["booking"]))
    } else {
        change(&task["change"])
    }
}

/// The customer's bookings, re-read once when the list is old.
fn bookings(customer: &str) -> Result<Vec<Value>, Error> {
    let mut list = read("list_bookings", json!({"customer": customer}))?;
    if is_stale(&list) {
        trace::note(
            "stale",
            &format!(
                "booking list is old (as_of {}); reading again",
                list["as_of"]
            ),
        );
        list = read("list_bookings", json!({"customer": customer}))?;
    }
    Ok(list["bookings"].as_array().cloned().unwrap_or_default())
}

/// The cheapest flight of a search with seats for everyone.
fn cheapest_fit(search: Value, passengers: u64) -> Result<Option<Value>, Error> {
    let flights = read("search_flights", search)?;
    Ok(flights
        .as_array()
        .and_then(|l| {
            l.iter()
                .find(|f| f["seats"].as_u64().unwrap_or(0) >= passengers)
        })
        .cloned())
}

fn refused(e: &Error) -> bool {
    matches!(
        e.kind,
        ErrorKind::Denied | ErrorKind::Conflict | ErrorKind::InvalidArgs | ErrorKind::NotFound
    )
}

fn book(b: &Value) -> Result<Value, Error> {
    let customer = text(&b["customer"]);
    let passengers = b["passengers"].as_u64().unwrap_or(1);
    let mut search =
        json!({"origin": b["origin"], "destination": b["destination"], "day": b["day"]});
    if let Some(flex) = b.get("flex_days") {
        search["flex_days"] = flex.clone();
    }
    let held = bookings(customer)?;
    let Some(flight) = cheapest_fit(search, passengers)? else {
        return Ok(json!({"world": "booking", "action": "no_flight"}));
    };
    // Already booked on this route and day (any flight of it)?
    let all_day = read(
        "search_flights",
        json!({"origin": b["origin"], "destination": b["destination"], "day": b["day"], "flex_days": b.get("flex_days").cloned().unwrap_or(json!(0))}),
    )?;
    let route: Vec<&str> = all_day
        .as_array()
        .map(|l| l.iter().filter_map(|f| f["id"].as_str()).collect())
        .unwrap_or_default();
    if let Some(h) = held
        .iter()
        .find(|h| h["status"] == "confirmed" && route.contains(&text(&h["flight"])))
    {
        trace::note(
            "decision",
            &format!(
                "{customer} already holds {} on this trip; not booking again",
                text(&h["id"])
            ),
        );
        return Ok(json!({"world": "booking", "action": "already_booked", "booking": h["id"]}));
    }
    let args = json!({"customer": customer, "flight": flight["id"], "passengers": passengers});
    for attempt in 1..=2 {
        match call("book", args.clone()) {
            Ok(done) => {
                return Ok(
                    json!({"world": "booking", "action": "booked", "booking": done["booking"], "flight": flight["id"]}),
                );
            }
            Err(e) if refused(&e) => {
                trace::note("refused", &format!("book was refused ({e}); not retrying"));
                return Ok(
                    json!({"world": "booking", "action": "refused", "reason": e.kind_name()}),
                );
            }
            Err(e) => {
                trace::note(
                    "check",
                    &format!("book failed ({e}); checking whether it landed"),
                );
                // Landed: a booking on the chosen flight (the customer held
                // none on this trip before, so any is this one).
                let landed = bookings(customer)?
                    .iter()
                    .any(|h| h["flight"] == flight["id"] && h["status"] == "confirmed");
                if landed {
                    trace::note(
                        "check",
                        "the booking landed despite the error; not repeating it",
                    );
                    return Ok(
                        json!({"world": "booking", "action": "booked", "flight": flight["id"]}),
                    );
                }
                if attempt == 2 {
                    return Ok(json!({"world": "booking", "action": "failed"}));
                }
            }
        }
    }
    unreachable!()
}

fn cancel(id: &str) -> Result<Value, Error> {
    let b = read("get_booking", json!({"id": id}))?;
    if b["status"] != "confirmed" {
        return Ok(json!({"world": "booking", "action": "none", "status": b["status"]}));
    }
    match call("cancel_booking", json!({"booking": id})) {
        Ok(done) => {
            Ok(json!({"world": "booking", "action": "cancelled", "refund": done["refund"]}))
        }
        Err(e) => Ok(json!({"world": "booking", "action": "refused", "reason": e.kind_name()})),
    }
}

fn change(c: &Value) -> Result<Value, Error> {
    let id = text(&c["booking"]);
    let b = read("get_booking", json!({"id": id}))?;
    let passengers = b["passengers"].as_u64().unwrap_or(1);
    let search = json!({"origin": c["origin"], "destination": c["destination"], "day": c["day"]});
    let Some(flight) = cheapest_fit(search, passengers)? else {
        return Ok(json!({"world": "booking", "action": "no_flight"}));
    };
    match call(
        "change_booking",
        json!({"booking": id, "flight": flight["id"]}),
    ) {
        Ok(done) => Ok(
            json!({"world": "booking", "action": "changed", "flight": flight["id"], "difference": done["difference"]}),
        ),
        Err(e) => Ok(json!({"world": "booking", "action": "refused", "reason": e.kind_name()})),
    }
}
