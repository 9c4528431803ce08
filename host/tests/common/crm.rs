//! The CRM world's customers, a tool that changes an address, a case
//! graded on an address (so its grade and failure signature carry raw
//! values), and a redaction policy that hides them: the fixtures of the
//! tests that check no view shows a raw value (`hardening_secrets.rs`,
//! `pg_roles.rs`). The world itself is `common::CRM_WORLD`.

/// The customers (`data/customers.jsonl`).
pub const ROWS: &str = r#"{"id": "CUST-004211", "email": "ana.lopez@example.com", "note": "prefers mail to ana.lopez@example.com"}
{"id": "CUST-000007", "email": "bo@example.org", "note": "none"}
"#;

/// Added to `CRM_WORLD`: a tool that changes a customer's address.
pub const SET_EMAIL: &str = r#"
[[tools]]
name = "set_email"
description = "Change a customer's e-mail"
params = { type = "object", properties = { id = { type = "string" }, email = { type = "string" } }, required = ["id", "email"] }
op = "update"
table = "customers"
set = { email = "$email" }
"#;

/// Reads both customers, changes an address, and is graded on one.
pub const CASE: &str = r#"world = "crm@v1"
seed = 5
clock = 2026-03-01T12:00:00Z
task = { calls = [
  { tool = "get_customer", args = { id = "CUST-004211" } },
  { tool = "set_email", args = { id = "CUST-000007", email = "bo.chen@example.net" } },
  { tool = "get_customer", args = { id = "CUST-000007" } },
] }
[[expect.state]]
table = "customers"
key = "CUST-004211"
field = "email"
equals = "someone.else@example.com"
"#;

/// Hides addresses and customer references.
pub const POLICY: &str =
    "detectors = [\"email\"]\n[[custom]]\nname = \"customer\"\npattern = \"CUST-[0-9]{6}\"\n";
