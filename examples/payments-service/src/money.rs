//! Currencies and rounding: amounts in minor units, rounded half away
//! from zero.

use worldline_service::ToolError;

#[derive(Debug, Clone, Copy)]
pub struct Currency {
    pub code: &'static str,
    /// Digits after the decimal point (2 for EUR, 0 for JPY).
    pub digits: u32,
}

const CURRENCIES: [Currency; 4] = [
    Currency {
        code: "EUR",
        digits: 2,
    },
    Currency {
        code: "GBP",
        digits: 2,
    },
    Currency {
        code: "USD",
        digits: 2,
    },
    Currency {
        code: "JPY",
        digits: 0,
    },
];

impl Currency {
    pub fn of(code: &str) -> Result<Currency, ToolError> {
        CURRENCIES
            .iter()
            .find(|c| c.code == code)
            .copied()
            .ok_or_else(|| ToolError::failed(format!("unknown currency `{code}`")))
    }

    fn scale(self) -> f64 {
        10f64.powi(self.digits as i32)
    }
}

/// Major units (as the agent passes them) to minor units. The tiny nudge
/// keeps `10.005` (stored as 10.00499…) rounding up as written.
pub fn to_minor(amount: f64, cur: Currency) -> Result<i64, ToolError> {
    if !amount.is_finite() || amount.abs() > 1e12 {
        return Err(ToolError::invalid_args(format!(
            "amount {amount} is out of range"
        )));
    }
    let scaled = amount * cur.scale();
    Ok((scaled + scaled.signum() * 1e-6).round() as i64)
}

/// Whether rounding changed the amount the agent asked for.
pub fn was_rounded(asked: f64, minor: i64, cur: Currency) -> bool {
    (asked * cur.scale() - minor as f64).abs() > 1e-6
}

/// `minor` of `from` converted at `rate` into minor units of `to`.
pub fn convert(minor: i64, from: Currency, to: Currency, rate: f64) -> i64 {
    let major = minor as f64 / from.scale();
    let scaled = major * rate * to.scale();
    (scaled + scaled.signum() * 1e-6).round() as i64
}

/// Minor units as a decimal number of major units (`1234` EUR → 12.34).
pub fn format_minor(minor: i64, cur: Currency) -> serde_json::Value {
    let major = minor as f64 / cur.scale();
    serde_json::Number::from_f64(major).map_or(serde_json::Value::Null, serde_json::Value::Number)
}

/// `YYYY-MM-DD`.
pub fn is_date(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}
