//! A careful agent for the `incident`, `accounts`, `support`, `payments`
//! and `booking` example worlds.
//!
//! What "careful" means here:
//! - a list that says it is old (`as_of` more than two minutes before the
//!   clock) is read again, and the record it leads to is checked with the
//!   fresh `get_*` tool;
//! - a read that times out is retried once;
//! - a write that fails is never repeated blindly: the agent first looks
//!   whether it landed anyway (notes are not idempotent);
//! - a denied call is not repeated, and nothing else is tried in its place;
//! - every decision leaves a trace note;
//! - in a conversation, it asks for what is missing and confirms with the
//!   customer (and gets approval where policy says) before acting.

mod accounts;
mod booking;
mod common;
mod incident;
mod payments;
mod support;

use serde_json::Value;
use worldline_guest::Error;

fn run(task: Value) -> Result<Value, Error> {
    if task.get("message").is_some() {
        support::run(&task)
    } else if task.get("alert").is_some() {
        incident::run(&task)
    } else if task.get("customer").is_some() {
        accounts::run(&task)
    } else if ["book", "cancel_booking", "change"]
        .iter()
        .any(|k| task.get(k).is_some())
    {
        booking::run(&task)
    } else if ["pay", "schedule", "cancel"]
        .iter()
        .any(|k| task.get(k).is_some())
    {
        payments::run(&task)
    } else {
        Err(Error::failed(
            "task names no `message` (support), `alert` (incident), `customer` (accounts) or `pay`/`schedule`/`cancel` (payments)",
        ))
    }
}

worldline_guest::agent!(run);
