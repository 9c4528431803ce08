//! Who is reading: the connecting database user's role in a store, from
//! its membership of the schema's group roles (`<schema>_viewer`,
//! `<schema>_responder`, made by migration 0003). A viewer reads redacted
//! copies only; a responder (or the schema's owner) may read raw runs, and
//! each such read is audited.

use postgres::GenericClient;
use serde::Serialize;

/// A reader's role in a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads the store's redacted view only.
    Viewer,
    /// May read raw runs (audited), writes runs, sets the policy.
    Responder,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Responder => "responder",
        }
    }

    /// Parse `viewer` or `responder`.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "viewer" => Some(Role::Viewer),
            "responder" => Some(Role::Responder),
            _ => None,
        }
    }
}

/// The group role of `role` in `schema` (a schema name needs no quoting).
pub fn group(schema: &str, role: Role) -> String {
    format!("{schema}_{}", role.name())
}

/// Two booleans, whether the connected user may act as a responder (the
/// privileges of `<schema>_responder` or of the schema's owner) and as a
/// viewer (those of `<schema>_viewer`), as SQL. The names are literals: a
/// schema name is a plain identifier (`url.rs`) and so are its roles'.
pub fn membership_sql(schema: &str) -> String {
    let (responder, viewer) = (group(schema, Role::Responder), group(schema, Role::Viewer));
    let member = |role: &str| {
        format!(
            "CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') \
             THEN pg_has_role(current_user, '{role}', 'USAGE') ELSE false END"
        )
    };
    format!(
        "coalesce(pg_has_role(current_user, (SELECT nspowner FROM pg_namespace WHERE nspname = '{schema}'), 'USAGE'), false) \
         OR {}, {}",
        member(&responder),
        member(&viewer)
    )
}

/// The reader's role from [`membership_sql`]'s two booleans.
pub fn from_membership(responder: bool, viewer: bool) -> Option<Role> {
    if responder {
        Some(Role::Responder)
    } else if viewer {
        Some(Role::Viewer)
    } else {
        None
    }
}

/// The role of the connected user in `schema`: a responder when it has the
/// privileges of `<schema>_responder` or of the schema's owner, a viewer
/// when it has those of `<schema>_viewer`, none otherwise.
pub fn of_user(c: &mut impl GenericClient, schema: &str) -> Result<Option<Role>, postgres::Error> {
    let row = c.query_one(&format!("SELECT {}", membership_sql(schema)), &[])?;
    Ok(from_membership(row.get(0), row.get(1)))
}
