//! The `payments` world's service (worlds/payments/v1): transfers between
//! accounts (with currency conversion and rounding, balance checks and a
//! daily outgoing limit), scheduled payments and their cancellation.
//!
//! Money is held in minor units (cents; yen have none). Amounts the agent
//! passes are decimal numbers in major units, rounded half away from zero
//! to the currency's minor unit; a conversion is rounded the same way.
//! Every id comes from a scheme (`TR-0001`, `SP-0001`), so the same calls
//! on the same world give the same ids.

mod money;

use money::{Currency, format_minor, to_minor};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use worldline_service::{Table, ToolError, args, now};

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Account {
    id: String,
    owner: String,
    currency: String,
    /// Minor units.
    balance: i64,
    /// Outgoing transfers per calendar day (UTC), minor units.
    daily_limit: i64,
    status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Transfer {
    id: String,
    from: String,
    to: String,
    /// Debited from `from`, minor units of its currency.
    amount: i64,
    /// Credited to `to`, minor units of its currency.
    credited: i64,
    currency: String,
    memo: String,
    at: String,
    status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Scheduled {
    id: String,
    from: String,
    to: String,
    amount: i64,
    currency: String,
    day: String,
    memo: String,
    status: String,
    created_at: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Rate {
    /// `EUR-GBP`: one EUR is `rate` GBP.
    id: String,
    rate: f64,
}

const ACCOUNTS: Table<Account> = Table::new("accounts");
const TRANSFERS: Table<Transfer> = Table::new("transfers");
const SCHEDULED: Table<Scheduled> = Table::new("scheduled");
const RATES: Table<Rate> = Table::new("rates");

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TransferArgs {
    from: String,
    to: String,
    amount: f64,
    memo: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScheduleArgs {
    from: String,
    to: String,
    amount: f64,
    day: String,
    memo: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: String,
}

fn call(tool: &str, a: Value) -> Result<Value, ToolError> {
    match tool {
        "get_account" => get_account(args(a)?),
        "transfer" => transfer(args(a)?),
        "schedule_payment" => schedule(args(a)?),
        "cancel_scheduled" => cancel(args(a)?),
        other => Err(ToolError::not_found(format!(
            "the payments service has no tool `{other}`"
        ))),
    }
}

worldline_service::service!(call);

/// An account as the agent sees it: the balance in major units too.
fn shown(a: &Account) -> Result<Value, ToolError> {
    let cur = Currency::of(&a.currency)?;
    Ok(json!({
        "id": a.id, "owner": a.owner, "currency": a.currency, "status": a.status,
        "balance": format_minor(a.balance, cur),
        "daily_limit": format_minor(a.daily_limit, cur),
        "spent_today": format_minor(spent_today(&a.id)?, cur),
    }))
}

fn get_account(a: IdArgs) -> Result<Value, ToolError> {
    shown(&ACCOUNTS.require(&a.id)?)
}

/// `YYYY-MM-DD` of an RFC 3339 time.
fn day_of(t: &str) -> &str {
    t.get(..10).unwrap_or(t)
}

/// What `account` has sent today (UTC), minor units.
fn spent_today(account: &str) -> Result<i64, ToolError> {
    let today = now();
    Ok(TRANSFERS
        .query(&json!({"from": account}))?
        .iter()
        .filter(|t| day_of(&t.at) == day_of(&today))
        .map(|t| t.amount)
        .sum())
}

/// The next id of a scheme: `PREFIX-0001`, one past the highest so far.
fn next_id(prefix: &str, ids: impl Iterator<Item = String>) -> String {
    let n = ids
        .filter_map(|id| {
            id.strip_prefix(prefix)?
                .strip_prefix('-')?
                .parse::<u32>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    format!("{prefix}-{:04}", n + 1)
}

/// The two accounts of a payment, both open and different.
fn parties(from: &str, to: &str) -> Result<(Account, Account), ToolError> {
    if from == to {
        return Err(ToolError::invalid_args(
            "`from` and `to` are the same account",
        ));
    }
    let (src, dst) = (ACCOUNTS.require(from)?, ACCOUNTS.require(to)?);
    for acc in [&src, &dst] {
        if acc.status != "open" {
            return Err(ToolError::conflict(format!(
                "account {} is {}",
                acc.id, acc.status
            )));
        }
    }
    Ok((src, dst))
}

/// `amount` (major units) in the source currency's minor units, positive.
fn debit_of(amount: f64, cur: Currency) -> Result<i64, ToolError> {
    let minor = to_minor(amount, cur)?;
    if minor <= 0 {
        return Err(ToolError::invalid_args(format!(
            "amount must be at least one {} minor unit",
            cur.code
        )));
    }
    Ok(minor)
}

fn transfer(a: TransferArgs) -> Result<Value, ToolError> {
    let (src, dst) = parties(&a.from, &a.to)?;
    let (sc, dc) = (Currency::of(&src.currency)?, Currency::of(&dst.currency)?);
    let amount = debit_of(a.amount, sc)?;
    if amount > src.balance {
        return Err(ToolError::conflict(format!(
            "insufficient funds: {} has {} {}, the transfer needs {}",
            src.id,
            format_minor(src.balance, sc),
            sc.code,
            format_minor(amount, sc)
        )));
    }
    let spent = spent_today(&src.id)?;
    if spent + amount > src.daily_limit {
        return Err(ToolError::denied(format!(
            "daily limit: {} may send {} {} a day and has sent {} today",
            src.id,
            format_minor(src.daily_limit, sc),
            sc.code,
            format_minor(spent, sc)
        )));
    }
    let credited = if sc.code == dc.code {
        amount
    } else {
        let rate = RATES.require(&format!("{}-{}", sc.code, dc.code))?.rate;
        money::convert(amount, sc, dc, rate)
    };
    let id = next_id("TR", TRANSFERS.all()?.into_iter().map(|t| t.id));
    let t = Transfer {
        id: id.clone(),
        from: src.id.clone(),
        to: dst.id.clone(),
        amount,
        credited,
        currency: sc.code.to_string(),
        memo: a.memo,
        at: now(),
        status: "completed".into(),
    };
    TRANSFERS.insert(&t)?;
    ACCOUNTS.update(&src.id, &json!({"balance": src.balance - amount}))?;
    ACCOUNTS.update(&dst.id, &json!({"balance": dst.balance + credited}))?;
    Ok(json!({
        "id": id, "from": t.from, "to": t.to, "memo": t.memo, "at": t.at,
        "amount": format_minor(amount, sc), "currency": sc.code,
        "credited": format_minor(credited, dc), "credited_currency": dc.code,
        "rounded": money::was_rounded(a.amount, amount, sc),
    }))
}

fn schedule(a: ScheduleArgs) -> Result<Value, ToolError> {
    let (src, _) = parties(&a.from, &a.to)?;
    let sc = Currency::of(&src.currency)?;
    let amount = debit_of(a.amount, sc)?;
    if !money::is_date(&a.day) {
        return Err(ToolError::invalid_args(format!(
            "day `{}` is not a YYYY-MM-DD date",
            a.day
        )));
    }
    let today = now();
    if a.day.as_str() <= day_of(&today) {
        return Err(ToolError::invalid_args(format!(
            "day {} is not after today ({}); use `transfer` for a payment today",
            a.day,
            day_of(&today)
        )));
    }
    if amount > src.daily_limit {
        return Err(ToolError::denied(format!(
            "daily limit: {} may send at most {} {} a day",
            src.id,
            format_minor(src.daily_limit, sc),
            sc.code
        )));
    }
    let id = next_id("SP", SCHEDULED.all()?.into_iter().map(|s| s.id));
    let s = Scheduled {
        id: id.clone(),
        from: a.from,
        to: a.to,
        amount,
        currency: sc.code.to_string(),
        day: a.day,
        memo: a.memo,
        status: "scheduled".into(),
        created_at: today,
    };
    SCHEDULED.insert(&s)?;
    Ok(json!({
        "id": id, "day": s.day, "memo": s.memo, "status": s.status,
        "amount": format_minor(amount, sc), "currency": sc.code,
    }))
}

fn cancel(a: IdArgs) -> Result<Value, ToolError> {
    let s = SCHEDULED.require(&a.id)?;
    if s.status != "scheduled" {
        return Err(ToolError::conflict(format!(
            "{} is already {}",
            s.id, s.status
        )));
    }
    if s.day.as_str() <= day_of(&now()) {
        return Err(ToolError::conflict(format!(
            "{} is due on {} and can no longer be cancelled",
            s.id, s.day
        )));
    }
    let s = SCHEDULED.update(
        &s.id,
        &json!({"status": "cancelled", "cancelled_at": now()}),
    )?;
    Ok(json!({"id": s.id, "status": s.status, "day": s.day}))
}
