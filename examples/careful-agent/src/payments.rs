//! The `payments` world: pay an invoice exactly once, schedule a payment,
//! or cancel one. Before paying, the agent looks (in a fresh list) whether
//! the invoice is paid already; a transfer whose reply is lost is checked
//! before it is tried again; a refusal (funds, limit, permission, a bad
//! day) is never retried or worked around but left in a note.

use crate::common::{call, is_stale, parse_ts, read, text};
use serde_json::{Value, json};
use worldline_guest::{Error, ErrorKind, trace};

const AUTHOR: &str = "careful-agent";

/// Milliseconds since the Unix epoch of an RFC 3339 UTC time (lists are
/// read milliseconds apart in virtual time).
fn ms(text: &str) -> i64 {
    let frac: String = text
        .split_once('.')
        .map(|(_, f)| {
            f.trim_end_matches('Z')
                .chars()
                .chain("000".chars())
                .take(3)
                .collect()
        })
        .unwrap_or_else(|| "000".into());
    parse_ts(text).unwrap_or(0) * 1000 + frac.parse::<i64>().unwrap_or(0)
}

pub fn run(task: &Value) -> Result<Value, Error> {
    if let Some(pay) = task.get("pay") {
        pay_once(pay)
    } else if let Some(s) = task.get("schedule") {
        schedule(s)
    } else {
        cancel(text(&task["cancel"]))
    }
}

/// Transfers sent from `account` and the (world) time of the list,
/// re-read once when the list is old.
fn transfers(account: &str) -> Result<(Vec<Value>, i64), Error> {
    let mut list = read("list_transfers", json!({"account": account}))?;
    if is_stale(&list) {
        trace::note(
            "stale",
            &format!(
                "transfer list of {account} is old (as_of {}); reading again",
                list["as_of"]
            ),
        );
        list = read("list_transfers", json!({"account": account}))?;
    }
    let as_of = ms(list["as_of"].as_str().unwrap_or(""));
    Ok((
        list["transfers"].as_array().cloned().unwrap_or_default(),
        as_of,
    ))
}

/// After a transfer whose answer was lost: whether it landed, from a list
/// read later than `since`, the world time of the list read before it (a
/// list that is merely "recent" can still predate the transfer; the
/// agent's own clock may be skewed). `None` when three reads are all older.
fn landed_since(account: &str, memo: &str, since: i64) -> Result<Option<bool>, Error> {
    for _ in 0..3 {
        let list = read("list_transfers", json!({"account": account}))?;
        if ms(list["as_of"].as_str().unwrap_or("")) > since && !is_stale(&list) {
            let rows = list["transfers"].as_array().cloned().unwrap_or_default();
            return Ok(Some(rows.iter().any(|t| t["memo"] == memo)));
        }
        trace::note(
            "stale",
            &format!(
                "transfer list is as of {}, before the transfer; reading again",
                list["as_of"]
            ),
        );
    }
    Ok(None)
}

/// Whether an error is a refusal (the world said no; asking again will
/// not change that).
fn refused(e: &Error) -> bool {
    matches!(
        e.kind,
        ErrorKind::Denied | ErrorKind::Conflict | ErrorKind::InvalidArgs | ErrorKind::NotFound
    )
}

fn note(account: &str, text: String) -> Result<(), Error> {
    trace::note("note", &text);
    call(
        "add_note",
        json!({"account": account, "text": text, "author": AUTHOR}),
    )
    .map(|_| ())
}

fn pay_once(pay: &Value) -> Result<Value, Error> {
    let (from, memo) = (text(&pay["from"]), text(&pay["memo"]));
    read("get_account", json!({"id": from}))?;
    let (sent, checked_at) = transfers(from)?;
    if let Some(t) = sent.iter().find(|t| t["memo"] == memo) {
        trace::note(
            "decision",
            &format!(
                "{memo} is already paid by {}; not paying again",
                text(&t["id"])
            ),
        );
        return Ok(
            json!({"world": "payments", "memo": memo, "action": "already_paid", "transfer": t["id"]}),
        );
    }
    let args = json!({"from": from, "to": pay["to"], "amount": pay["amount"], "memo": memo});
    for attempt in 1..=2 {
        match call("transfer", args.clone()) {
            Ok(t) => {
                return Ok(
                    json!({"world": "payments", "memo": memo, "action": "paid", "transfer": t["id"], "amount": t["amount"], "credited": t["credited"]}),
                );
            }
            Err(e) if refused(&e) => {
                note(
                    from,
                    format!("Payment of {memo} refused ({e}); not retried, please review."),
                )?;
                return Ok(
                    json!({"world": "payments", "memo": memo, "action": "refused", "reason": e.kind_name()}),
                );
            }
            Err(e) => {
                trace::note(
                    "check",
                    &format!("transfer failed ({e}); checking whether it landed"),
                );
                match landed_since(from, memo, checked_at)? {
                    Some(true) => {
                        trace::note("check", "it landed despite the error; not repeating it");
                        return Ok(json!({"world": "payments", "memo": memo, "action": "paid"}));
                    }
                    None => {
                        note(
                            from,
                            format!(
                                "Payment of {memo} failed ({e}) and no fresh list shows whether it landed; not retried, please check."
                            ),
                        )?;
                        return Ok(json!({"world": "payments", "memo": memo, "action": "unknown"}));
                    }
                    Some(false) => {}
                }
                if attempt == 2 {
                    note(
                        from,
                        format!("Payment of {memo} failed twice ({e}); please review."),
                    )?;
                    return Ok(json!({"world": "payments", "memo": memo, "action": "failed"}));
                }
            }
        }
    }
    unreachable!()
}

fn schedule(s: &Value) -> Result<Value, Error> {
    let (from, memo) = (text(&s["from"]), text(&s["memo"]));
    let list = read("list_scheduled", json!({"account": from}))?;
    let existing = list.as_array().and_then(|l| {
        l.iter()
            .find(|p| p["memo"] == memo && p["status"] == "scheduled")
            .cloned()
    });
    if let Some(p) = existing {
        trace::note(
            "decision",
            &format!("{memo} is already scheduled as {}", text(&p["id"])),
        );
        return Ok(
            json!({"world": "payments", "memo": memo, "action": "already_scheduled", "scheduled": p["id"]}),
        );
    }
    match call("schedule_payment", s.clone()) {
        Ok(p) => Ok(
            json!({"world": "payments", "memo": memo, "action": "scheduled", "scheduled": p["id"]}),
        ),
        Err(e) => {
            note(
                from,
                format!("Scheduling {memo} was refused ({e}); not retried, please review."),
            )?;
            Ok(
                json!({"world": "payments", "memo": memo, "action": "refused", "reason": e.kind_name()}),
            )
        }
    }
}

fn cancel(id: &str) -> Result<Value, Error> {
    match call("cancel_scheduled", json!({"id": id})) {
        Ok(p) => Ok(
            json!({"world": "payments", "scheduled": id, "action": "cancelled", "status": p["status"]}),
        ),
        Err(e) => {
            let account = "A-1";
            note(
                account,
                format!("Cancelling {id} was refused ({e}); not retried, please review."),
            )?;
            Ok(
                json!({"world": "payments", "scheduled": id, "action": "refused", "reason": e.kind_name()}),
            )
        }
    }
}
