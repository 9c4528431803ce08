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

/// The role of the connected user in `schema`: a responder when it has the
/// privileges of `<schema>_responder` or of the schema's owner, a viewer
/// when it has those of `<schema>_viewer`, none otherwise.
pub fn of_user(c: &mut impl GenericClient, schema: &str) -> Result<Option<Role>, postgres::Error> {
    let row = c.query_one(
        "SELECT coalesce(pg_has_role(current_user, (SELECT nspowner FROM pg_namespace WHERE nspname = $1::name), 'USAGE'), false)
             OR CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $2::name)
                     THEN pg_has_role(current_user, $2::name, 'USAGE') ELSE false END,
                CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $3::name)
                     THEN pg_has_role(current_user, $3::name, 'USAGE') ELSE false END",
        &[
            &schema,
            &group(schema, Role::Responder),
            &group(schema, Role::Viewer),
        ],
    )?;
    let (responder, viewer): (bool, bool) = (row.get(0), row.get(1));
    Ok(if responder {
        Some(Role::Responder)
    } else if viewer {
        Some(Role::Viewer)
    } else {
        None
    })
}
