//! A naive agent for the `incident`, `accounts`, `support`, `payments`
//! and `booking` example worlds.
//!
//! It does the obvious thing and trusts the first answer it gets: it
//! believes whatever list it is handed (however old), closes an account on
//! a failed payment, repeats a write that failed (even a denied one), and
//! gives up when a read times out. With a customer it acts on the first
//! message: it guesses the newest order when none is named, never confirms,
//! never asks for approval, and reports success whatever the tool said.
//! The example cases show where that goes wrong; on a quiet day it works
//! fine.

use serde_json::{Value, json};
use worldline_guest::{Error, tools, trace, user};

const AUTHOR: &str = "naive-agent";

fn call(name: &str, args: Value) -> Result<Value, Error> {
    tools::call(name, &args)
}

/// A write, tried again once if it fails for any reason.
fn write_retrying(name: &str, args: Value) -> Result<Value, Error> {
    call(name, args.clone()).or_else(|e| {
        trace::note("retry", &format!("{name} failed ({e}); trying again"));
        call(name, args)
    })
}

fn run(task: Value) -> Result<Value, Error> {
    if task.get("message").is_some() {
        support(&task)
    } else if task.get("alert").is_some() {
        incident(&task)
    } else if task.get("customer").is_some() {
        accounts(&task)
    } else if ["book", "cancel_booking", "change"]
        .iter()
        .any(|k| task.get(k).is_some())
    {
        booking(&task)
    } else {
        payments(&task)
    }
}

fn incident(task: &Value) -> Result<Value, Error> {
    let (alert_id, ticket) = (task["alert"].as_str().unwrap_or(""), &task["ticket"]);
    let alert = call("get_alert", json!({"id": alert_id}))?;
    let service = alert["service"].as_str().unwrap_or("").to_string();
    let list = call("list_deploys", json!({"service": service}))?;
    let newest = list["deploys"][0].clone();
    let cause = newest["id"].as_str().unwrap_or_default().to_string();
    trace::note(
        "decision",
        &format!("newest deploy of {service} is {cause}: rolling it back"),
    );
    let rolled = write_retrying(
        "rollback_deploy",
        json!({"id": cause, "reason": alert["summary"]}),
    )
    .is_ok();
    let closed = write_retrying("close_ticket", json!({"id": ticket})).is_ok();
    let text = format!("{alert_id}: rolled back {cause}, the newest deploy of {service}.");
    let noted = write_retrying(
        "add_incident_note",
        json!({"incident": ticket, "text": text, "author": AUTHOR}),
    )
    .is_ok();
    Ok(json!({
        "world": "incident", "alert": alert_id, "ticket": ticket,
        "cause_deploy": cause,
        "action": if rolled { "rolled_back" } else { "rollback_failed" },
        "ticket_status": if closed { "closed" } else { "open" },
        "note": noted,
    }))
}

fn accounts(task: &Value) -> Result<Value, Error> {
    let id = &task["customer"];
    let _customer = call("get_customer", json!({"id": id}))?;
    let list = call("list_payments", json!({"customer": id}))?;
    let latest = list["payments"][0].clone();
    let action = if latest["status"] == "failed" {
        trace::note(
            "decision",
            &format!(
                "latest payment {} failed: closing the account",
                latest["id"]
            ),
        );
        write_retrying("close_account", json!({"id": id})).map_or("close_failed", |_| "close")
    } else {
        "none"
    };
    let text = format!(
        "Latest payment {} {}; action: {action}.",
        latest["id"], latest["status"]
    );
    let noted = write_retrying(
        "add_note",
        json!({"customer": id, "text": text, "author": AUTHOR}),
    )
    .is_ok();
    Ok(json!({
        "world": "accounts", "customer": id,
        "latest_payment": latest["id"], "latest_status": latest["status"],
        "action": action, "note": noted,
    }))
}

/// Pays, schedules or cancels straight away: no look at what is already
/// paid, and every failure is simply tried again.
fn payments(task: &Value) -> Result<Value, Error> {
    let (tool, args) = if let Some(pay) = task.get("pay") {
        ("transfer", pay.clone())
    } else if let Some(s) = task.get("schedule") {
        ("schedule_payment", s.clone())
    } else {
        ("cancel_scheduled", json!({"id": task["cancel"]}))
    };
    let done = write_retrying(tool, args);
    Ok(json!({
        "world": "payments", "tool": tool,
        "action": if done.is_ok() { "done" } else { "failed" },
    }))
}

/// Books the first flight the search lists (whatever its seats), without
/// looking at what the customer already holds; any failure is tried again.
fn booking(task: &Value) -> Result<Value, Error> {
    if let Some(b) = task.get("book") {
        let mut search =
            json!({"origin": b["origin"], "destination": b["destination"], "day": b["day"]});
        if let Some(flex) = b.get("flex_days") {
            search["flex_days"] = flex.clone();
        }
        let flights = call("search_flights", search)?;
        let flight = flights[0]["id"].clone();
        let done = write_retrying(
            "book",
            json!({"customer": b["customer"], "flight": flight, "passengers": b["passengers"]}),
        );
        return Ok(
            json!({"world": "booking", "flight": flight, "action": if done.is_ok() { "booked" } else { "failed" }}),
        );
    }
    if let Some(c) = task.get("cancel_booking") {
        let done = write_retrying("cancel_booking", json!({"booking": c["booking"]}));
        return Ok(
            json!({"world": "booking", "action": if done.is_ok() { "cancelled" } else { "failed" }}),
        );
    }
    let c = &task["change"];
    let flights = call(
        "search_flights",
        json!({"origin": c["origin"], "destination": c["destination"], "day": c["day"]}),
    )?;
    let done = write_retrying(
        "change_booking",
        json!({"booking": c["booking"], "flight": flights[0]["id"]}),
    );
    Ok(json!({"world": "booking", "action": if done.is_ok() { "changed" } else { "failed" }}))
}

fn support(task: &Value) -> Result<Value, Error> {
    let message = task["message"].as_str().unwrap_or("").to_lowercase();
    let named = message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|w| w.len() >= 3 && w.as_bytes()[1] == b'-')
        .map(str::to_uppercase);
    let order = match named {
        Some(id) => id,
        None => {
            let orders = call("list_orders", json!({"customer": task["customer"]}))?;
            orders[0]["id"].as_str().unwrap_or("").to_string()
        }
    };
    let (tool, done) = if message.contains("cancel") {
        ("cancel_order", "cancelled")
    } else {
        ("refund_order", "refunded")
    };
    trace::note("decision", &format!("{tool} {order} right away"));
    let _ = call(tool, json!({"id": order}));
    user::say(&format!(
        "Done: order {order} is {done}. Is there anything else I can help with?"
    ));
    Ok(json!({"world": "support", "order": order, "action": done}))
}

worldline_guest::agent!(run);
