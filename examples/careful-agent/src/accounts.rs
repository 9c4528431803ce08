//! The `accounts` world: review one customer's billing and apply the
//! policy. A failed latest payment after a reliable history gets a 30-day
//! grace period (never a closure); an account is closed only when the
//! customer asked and has paid nothing in 180 days. One note either way.

use crate::common::{self, Wrote, call, is_stale, now_s, read, text, ts, write};
use serde_json::{Value, json};
use worldline_guest::{Error, trace};

const AUTHOR: &str = "careful-agent";
const GRACE_DAYS: u64 = 30;
const CLOSE_AFTER_DAYS: i64 = 180;
/// "Paid reliably": this many payments before the failed one, all succeeded.
const RELIABLE_RUN: usize = 3;

pub fn run(task: &Value) -> Result<Value, Error> {
    let id = task["customer"].as_str().unwrap_or_default().to_string();
    let customer = read("get_customer", json!({"id": id}))?;
    if customer["status"] == "closed" {
        trace::note(
            "decision",
            &format!("{id} is already closed; nothing to do"),
        );
        return Ok(json!({"world": "accounts", "customer": id, "action": "none"}));
    }
    let payments = fresh_payments(&id, &customer)?;
    let latest = payments.first().cloned().unwrap_or(Value::Null);
    let last_success = payments
        .iter()
        .filter(|p| p["status"] == "succeeded")
        .map(|p| ts(p, "at"))
        .max();
    let quiet_days = last_success.map(|t| (now_s() - t) / 86_400);

    let asked = customer["close_requested"] == true;
    let dormant = quiet_days.is_none_or(|d| d >= CLOSE_AFTER_DAYS);
    let reliable = payments.len() > RELIABLE_RUN
        && payments[1..=RELIABLE_RUN]
            .iter()
            .all(|p| p["status"] == "succeeded");
    let decision = if asked && dormant {
        "close"
    } else if latest["status"] == "failed" && reliable {
        "grace_period"
    } else if latest["status"] == "failed" {
        "escalate"
    } else {
        "none"
    };
    trace::note(
        "decision",
        &format!(
            "{id}: latest payment {} {}; close requested: {asked}; days since a successful payment: {quiet_days:?}; reliable before: {reliable} => {decision}",
            text(&latest["id"]),
            text(&latest["status"])
        ),
    );

    let (action, detail) = match decision {
        "close" => {
            let w = write("close_account", json!({"id": id}), || {
                call("get_customer", json!({"id": id})).is_ok_and(|c| c["status"] == "closed")
            });
            let action = if w.ok() { "close" } else { "escalate" };
            (action, format!("closing the account: {}", w.label()))
        }
        "grace_period" => grace(&id),
        "escalate" => (
            "escalate",
            "latest payment failed and the history is not reliable; a human should decide"
                .to_string(),
        ),
        _ => (
            "none",
            "latest payment succeeded; nothing to do".to_string(),
        ),
    };

    let text = format!(
        "Billing review of {id}: latest payment {} ({}) at {}. Decision: {decision}; {detail}.",
        latest["id"].as_str().unwrap_or("none"),
        latest["status"].as_str().unwrap_or("-"),
        latest["at"].as_str().unwrap_or("-"),
    );
    let note = add_note(&id, &text);
    Ok(json!({
        "world": "accounts",
        "customer": id,
        "latest_payment": latest["id"],
        "latest_status": latest["status"],
        "decision": decision,
        "action": action,
        "detail": detail,
        "note": note.label(),
    }))
}

/// Put every active subscription of `id` into a 30-day grace period. A
/// denial stops it (and is never answered by closing the account instead).
fn grace(id: &str) -> (&'static str, String) {
    let subs = match read("list_subscriptions", json!({"customer": id})) {
        Ok(s) => s.as_array().cloned().unwrap_or_default(),
        Err(e) => return ("escalate", format!("could not list subscriptions ({e})")),
    };
    let mut done = vec![];
    for sub in subs.iter().filter(|s| s["status"] == "active") {
        let sid = sub["id"].as_str().unwrap_or_default().to_string();
        let w = write(
            "set_grace_period",
            json!({"id": sid, "days": GRACE_DAYS}),
            || {
                call("list_subscriptions", json!({"customer": id})).is_ok_and(|all| {
                    all.as_array().is_some_and(|a| {
                        a.iter()
                            .any(|s| s["id"] == sid.as_str() && s["status"] == "grace")
                    })
                })
            },
        );
        if !w.ok() {
            return (
                "escalate",
                format!(
                    "grace period for {sid}: {}; escalating, account left open",
                    w.label()
                ),
            );
        }
        done.push(sid);
    }
    (
        "grace_period",
        format!("{GRACE_DAYS}-day grace period on {}", done.join(", ")),
    )
}

/// Payments of `id`, newest first. A stale list is read again; whatever the
/// list says, the customer's `latest_payment` is read fresh and merged in.
fn fresh_payments(id: &str, customer: &Value) -> Result<Vec<Value>, Error> {
    let mut answer = read("list_payments", json!({"customer": id}))?;
    if is_stale(&answer) {
        trace::note(
            "stale",
            &format!(
                "payment list is as of {}; reading it again",
                text(&answer["as_of"])
            ),
        );
        answer = read("list_payments", json!({"customer": id}))?;
    }
    let list: Vec<Value> = answer["payments"].as_array().cloned().unwrap_or_default();
    let latest_id = customer["latest_payment"].as_str();
    let listed_first = list.first().and_then(|p| p["id"].as_str());
    let fresh = match latest_id {
        Some(pid) => {
            if listed_first != Some(pid) {
                trace::note(
                    "stale",
                    &format!(
                        "list starts at {listed_first:?}, customer says latest is {pid}; reading {pid}"
                    ),
                );
            }
            Some(read("get_payment", json!({"id": pid}))?)
        }
        None => None,
    };
    Ok(common::merge_newest_first(list, fresh, "at"))
}

/// Add the one note; after a failure, look before writing again.
fn add_note(customer: &str, text: &str) -> Wrote {
    let args = json!({"customer": customer, "text": text, "author": AUTHOR});
    write("add_note", args, || {
        call("list_notes", json!({"customer": customer})).is_ok_and(|notes| {
            notes
                .as_array()
                .is_some_and(|ns| ns.iter().any(|n| n["text"] == text))
        })
    })
}
