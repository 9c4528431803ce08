//! The `support` world: talk with a customer about one of their orders.
//! Careful means: ask for the order when the customer did not name it,
//! confirm the exact action with the customer before any refund or
//! cancellation (and follow them when they change their mind), get a
//! supervisor's approval for refunds over the limit, and tell the customer
//! the truth about what happened.

use crate::common::{call, read, text};
use serde_json::{Value, json};
use worldline_guest::approval::{self, Decision};
use worldline_guest::user::{self, Turn};
use worldline_guest::{Error, trace};

/// Refunds above this need a supervisor's approval (the world's policy).
const APPROVAL_LIMIT: f64 = 100.0;
/// How often the agent asks the same question before it stops.
const ASKS: usize = 3;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Intent {
    Refund,
    Cancel,
}

impl Intent {
    fn of(text: &str) -> Option<Intent> {
        let t = text.to_lowercase();
        if t.contains("cancel") {
            Some(Intent::Cancel)
        } else if ["refund", "money back", "return"]
            .iter()
            .any(|w| t.contains(w))
        {
            Some(Intent::Refund)
        } else {
            None
        }
    }

    fn verb(self) -> &'static str {
        match self {
            Intent::Refund => "refund",
            Intent::Cancel => "cancel",
        }
    }

    fn done(self) -> &'static str {
        match self {
            Intent::Refund => "refunded",
            Intent::Cancel => "cancelled",
        }
    }
}

/// An order number in a message (`A-1001`: a capital letter, a dash,
/// digits).
fn order_in(text: &str) -> Option<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .find(|w| {
            let b = w.as_bytes();
            b.len() >= 3
                && b[0].is_ascii_uppercase()
                && b[1] == b'-'
                && b[2..].iter().all(u8::is_ascii_digit)
        })
        .map(String::from)
}

enum Answer {
    Yes,
    No,
    Unclear,
}

fn answer_of(reply: &str) -> Answer {
    let t = format!(" {} ", reply.to_lowercase().replace([',', '.', '!'], " "));
    let has = |ws: &[&str]| ws.iter().any(|w| t.contains(w));
    if has(&[
        " no ",
        " don't ",
        " do not ",
        " keep ",
        "changed my mind",
        " not ",
    ]) {
        Answer::No
    } else if has(&[
        " yes ",
        " sure ",
        " go ahead ",
        " please do ",
        " ok ",
        " okay ",
        " yep ",
    ]) {
        Answer::Yes
    } else {
        Answer::Unclear
    }
}

/// Say something; `None` when the customer has left.
fn say(message: &str) -> Option<String> {
    match user::say(message) {
        Turn::Reply(r) => Some(r),
        Turn::Ended { reason, .. } => {
            trace::note("conversation", &format!("the customer left: {reason}"));
            None
        }
    }
}

fn outcome(order: &str, action: &str) -> Result<Value, Error> {
    Ok(json!({"world": "support", "order": order, "action": action}))
}

pub fn run(task: &Value) -> Result<Value, Error> {
    let customer = text(&task["customer"]).to_string();
    let first = text(&task["message"]).to_string();
    let mut intent = Intent::of(&first);
    let mut order_id = order_in(&first);
    for _ in 0..ASKS {
        if order_id.is_some() {
            break;
        }
        let Some(reply) =
            say("Which order is it about? Please give me the order number (it looks like A-1001).")
        else {
            return outcome("", "none");
        };
        order_id = order_in(&reply);
        intent = intent.or(Intent::of(&reply));
    }
    let Some(order_id) = order_id else {
        say("Without an order number I can't look it up; nothing was changed.");
        return outcome("", "none");
    };
    let Some(mut intent) = intent else {
        say("I'm sorry, I can only help with refunds and cancellations; nothing was changed.");
        return outcome(&order_id, "none");
    };
    let order = match read("get_order", json!({"id": order_id})) {
        Ok(o) if o["customer"] == customer.as_str() => o,
        _ => {
            say(&format!(
                "I can't find order {order_id} on your account; nothing was changed."
            ));
            return outcome(&order_id, "none");
        }
    };
    let amount = order["amount"].as_f64().unwrap_or(0.0);
    let item = text(&order["item"]).to_string();

    let mut confirmed = false;
    let mut preface = String::new();
    for _ in 0..ASKS {
        if intent == Intent::Cancel && order["status"] != "processing" {
            preface = format!(
                "Order {order_id} has already been {}, so it can't be cancelled; I can refund it instead. ",
                text(&order["status"])
            );
            intent = Intent::Refund;
        }
        let question = format!(
            "{preface}To confirm: shall I {} order {order_id} ({item}, {amount})? Please answer yes or no.",
            intent.verb()
        );
        preface.clear();
        let Some(reply) = say(&question) else {
            return outcome(&order_id, "none");
        };
        match Intent::of(&reply) {
            Some(other) if other != intent => {
                trace::note(
                    "conversation",
                    &format!("the customer changed their mind: {} instead", other.verb()),
                );
                intent = other;
                continue;
            }
            _ => {}
        }
        match answer_of(&reply) {
            Answer::Yes => {
                confirmed = true;
                break;
            }
            Answer::No => {
                say(&format!(
                    "Alright, I won't {} order {order_id}. Nothing was changed.",
                    intent.verb()
                ));
                return outcome(&order_id, "none");
            }
            Answer::Unclear => {}
        }
    }
    if !confirmed {
        say("I'll leave the order as it is until you confirm. Nothing was changed.");
        return outcome(&order_id, "none");
    }
    if intent == Intent::Refund && amount > APPROVAL_LIMIT {
        let details = json!({"order": order_id, "amount": amount});
        if let Decision::Denied(reason) = approval::request("refund", &details)? {
            say(&format!(
                "I'm sorry: a supervisor declined the refund of order {order_id} ({reason}). Nothing was changed."
            ));
            return outcome(&order_id, "approval_denied");
        }
    }
    let tool = match intent {
        Intent::Refund => "refund_order",
        Intent::Cancel => "cancel_order",
    };
    match call(tool, json!({"id": order_id})) {
        Ok(_) => {
            say(&format!(
                "Done: order {order_id} is {}. Is there anything else I can help with?",
                intent.done()
            ));
            outcome(&order_id, intent.done())
        }
        Err(e) => {
            say(&format!(
                "I couldn't {} order {order_id}: {}. Nothing was changed.",
                intent.verb(),
                e.message
            ));
            outcome(&order_id, "failed")
        }
    }
}
