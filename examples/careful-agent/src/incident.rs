//! The `incident` world: find the deploy behind an alert, roll it back,
//! close the incident ticket, and leave exactly one incident note.

use crate::common::{self, Wrote, call, is_stale, read, text, ts, write};
use serde_json::{Value, json};
use worldline_guest::{Error, trace};

const AUTHOR: &str = "careful-agent";

pub fn run(task: &Value) -> Result<Value, Error> {
    let alert_id = task["alert"].as_str().unwrap_or_default().to_string();
    let ticket_id = task["ticket"].as_str().unwrap_or_default().to_string();

    let alert = match read("get_alert", json!({"id": alert_id})) {
        Ok(a) => a,
        Err(e) => {
            // Without the alert there is no service and no time: acting
            // now would be guessing. Say so on the incident and stop.
            trace::note(
                "decision",
                &format!("cannot read {alert_id} ({e}); escalating, no action"),
            );
            let text = format!(
                "Could not read {alert_id} after one retry ({e}). No rollback done; escalating to a human."
            );
            let note = add_note(&ticket_id, &text);
            return Ok(json!({
                "world": "incident", "alert": alert_id, "ticket": ticket_id,
                "cause_deploy": null, "action": "escalated", "note": note.label(),
            }));
        }
    };
    let service = alert["service"].as_str().unwrap_or_default().to_string();
    let alert_at = ts(&alert, "at");

    let deploys = fresh_deploys(&service)?;
    let Some(cause) = deploys.iter().find(|d| ts(d, "at") <= alert_at).cloned() else {
        trace::note(
            "decision",
            &format!("no deploy of {service} before the alert; escalating"),
        );
        let note = add_note(
            &ticket_id,
            &format!("{alert_id}: no deploy of {service} precedes the alert; escalating."),
        );
        return Ok(json!({
            "world": "incident", "alert": alert_id, "ticket": ticket_id,
            "cause_deploy": null, "action": "escalated", "note": note.label(),
        }));
    };
    let cause_id = cause["id"].as_str().unwrap_or_default().to_string();
    // The list may lag; the deploy record itself is the source of truth.
    let fresh = read("get_deploy", json!({"id": cause_id}))?;
    trace::note(
        "decision",
        &format!(
            "{cause_id} ({service} {}) at {} is the last deploy before {alert_id} at {}",
            fresh["version"], fresh["at"], alert["at"]
        ),
    );

    let rollback = if fresh["status"] == "rolled_back" {
        trace::note("decision", &format!("{cause_id} is already rolled back"));
        Wrote::Landed
    } else {
        let reason = format!(
            "{alert_id}: {}",
            alert["summary"].as_str().unwrap_or("alert")
        );
        write(
            "rollback_deploy",
            json!({"id": cause_id, "reason": reason}),
            || {
                call("get_deploy", json!({"id": cause_id}))
                    .is_ok_and(|d| d["status"] == "rolled_back")
            },
        )
    };

    let ticket = read("get_ticket", json!({"id": ticket_id}))?;
    let close = if !rollback.ok() {
        trace::note("decision", "rollback not done: the ticket stays open");
        None
    } else if ticket["status"] != "open" {
        None
    } else {
        Some(write("close_ticket", json!({"id": ticket_id}), || {
            call("get_ticket", json!({"id": ticket_id})).is_ok_and(|t| t["status"] == "closed")
        }))
    };
    let ticket_status = match &close {
        Some(w) if w.ok() => "closed",
        _ => ticket["status"].as_str().unwrap_or("open"),
    };

    let mut text = format!(
        "{alert_id} ({service} {} at {}): caused by {cause_id} ({service} {} at {}, \"{}\"). Rollback of {cause_id}: {}.",
        alert["kind"].as_str().unwrap_or("alert"),
        alert["at"].as_str().unwrap_or("?"),
        fresh["version"].as_str().unwrap_or("?"),
        fresh["at"].as_str().unwrap_or("?"),
        fresh["change"].as_str().unwrap_or(""),
        rollback.label(),
    );
    match &close {
        Some(Wrote::Denied) => {
            text += &format!(" Closing {ticket_id} was denied; it stays open for a human.")
        }
        Some(w) => text += &format!(" Closing {ticket_id}: {}.", w.label()),
        None => text += &format!(" {ticket_id} left {ticket_status}."),
    }
    let note = add_note(&ticket_id, &text);

    Ok(json!({
        "world": "incident",
        "alert": alert_id,
        "ticket": ticket_id,
        "service": service,
        "cause_deploy": cause_id,
        "action": if rollback.ok() { "rolled_back" } else { "rollback_failed" },
        "ticket_status": ticket_status,
        "close": close.as_ref().map(Wrote::label),
        "note": note.label(),
    }))
}

/// Deploys of `service`, newest first, no older than `MAX_AGE_S`. A stale
/// list is read again; if it is still stale, the service's current deploy
/// (read fresh) is added to what the list shows.
fn fresh_deploys(service: &str) -> Result<Vec<Value>, Error> {
    let mut answer = read("list_deploys", json!({"service": service}))?;
    if is_stale(&answer) {
        trace::note(
            "stale",
            &format!(
                "deploy list is as of {}; reading it again",
                text(&answer["as_of"])
            ),
        );
        answer = read("list_deploys", json!({"service": service}))?;
    }
    let list: Vec<Value> = answer["deploys"].as_array().cloned().unwrap_or_default();
    if !is_stale(&answer) {
        return Ok(list);
    }
    trace::note(
        "stale",
        &format!(
            "deploy list still as of {}; asking the service what runs now",
            text(&answer["as_of"])
        ),
    );
    let svc = read("get_service", json!({"id": service}))?;
    let current = match svc["current_deploy"].as_str() {
        Some(id) => Some(read("get_deploy", json!({"id": id}))?),
        None => None,
    };
    Ok(common::merge_newest_first(list, current, "at"))
}

/// Add the one incident note; after a failure, look before writing again.
fn add_note(incident: &str, text: &str) -> Wrote {
    let args = json!({"incident": incident, "text": text, "author": AUTHOR});
    write("add_incident_note", args, || {
        call("list_incident_notes", json!({"incident": incident})).is_ok_and(|notes| {
            notes
                .as_array()
                .is_some_and(|ns| ns.iter().any(|n| n["text"] == text))
        })
    })
}
