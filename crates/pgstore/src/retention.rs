//! The store's retention policy (a `policy.toml` text) that `gc` follows
//! on every machine: one row, absent until a responder sets it. Whether
//! the text is a policy is the caller's to check.

use super::{Database, DbError};

impl Database {
    /// The retention policy's text, if one was set.
    pub fn retention_policy(&self) -> Result<Option<String>, DbError> {
        self.with(|c| {
            Ok(
                c.query_opt("SELECT policy FROM retention WHERE id = 1", &[])?
                    .map(|r| r.get(0)),
            )
        })
    }

    /// Set (or replace) the retention policy's text.
    pub fn set_retention_policy(&self, policy: &str) -> Result<(), DbError> {
        self.with(|c| {
            c.execute(
                "INSERT INTO retention (id, policy) VALUES (1, $1)
                 ON CONFLICT (id) DO UPDATE SET policy = excluded.policy,
                     set_by = session_user, set_at = now()",
                &[&policy],
            )
            .map(|_| ())
        })
    }
}
