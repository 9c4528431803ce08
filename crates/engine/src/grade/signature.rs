//! The failure signature ([`worldline_log::log::signature`]) of a run whose
//! [`Grade`] is in hand rather than in a footer.

use crate::grade::Grade;
use worldline_log::log::{Status, signature};

/// The signature of a run that ended with `status` and `grade`, or `None`
/// when it passed (exit code 0 of `worldline run`).
pub(crate) fn of(status: Status, grade: Option<&Grade>) -> Option<String> {
    signature::of_parts(
        status,
        grade.map(|g| (g.passed, g.failures().next().map(|a| a.what.as_str()))),
    )
}
