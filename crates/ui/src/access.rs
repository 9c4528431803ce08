//! Who reads through the UI: the readers a server issues tokens to (by
//! role on a database store, never above the connection's), and the
//! middleware after the guard that decides what a request may see: a
//! viewer is refused the raw view and every form; a responder's raw view
//! is audited before the page is built.

use super::{App, Config, Viewing, guard, run};
use anyhow::Result;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use worldline_pgstore::roles::Role;
use worldline_store::store::StoreDir;

/// The runs a request's page shows: `/run/ID...` and `/diff?a=..&b=..`.
fn runs_named(req: &Request) -> Vec<String> {
    let path = req.uri().path();
    if let Some(rest) = path.strip_prefix("/run/") {
        return vec![rest.split('/').next().unwrap_or_default().to_string()];
    }
    if path == "/diff" {
        return req
            .uri()
            .query()
            .unwrap_or_default()
            .split('&')
            .filter_map(|kv| kv.strip_prefix("a=").or_else(|| kv.strip_prefix("b=")))
            .map(String::from)
            .collect();
    }
    Vec::new()
}

/// After the guard: what the reader may see of this request. A page asked
/// for with `unredacted=1` is a responder's, and is audited (each run it
/// shows, the token's name, the route) before it is served, as is a
/// responder's form (fork, replay: re-executing reads the raw run); a
/// viewer is refused both.
pub(crate) async fn view(State(app): State<Arc<App>>, mut req: Request, next: Next) -> Response {
    let reader = req
        .extensions()
        .get::<guard::Reader>()
        .cloned()
        .expect("the guard names the reader");
    let asked = req
        .uri()
        .query()
        .unwrap_or_default()
        .split('&')
        .any(|kv| kv == "unredacted=1");
    let forbidden =
        |why: String| (StatusCode::FORBIDDEN, format!("403 forbidden: {why}\n")).into_response();
    if reader.role == Some(Role::Viewer) && (asked || req.method() != axum::http::Method::GET) {
        let what = match asked {
            true => "the unredacted view",
            false => "forking or replaying (re-executing reads the raw run)",
        };
        // The token's role, not the connection's (a responder's UI
        // issues viewer tokens: it named its own user as a responder).
        let group = app.store.database().map_or_else(String::new, |db| {
            worldline_pgstore::roles::group(&db.url.schema, Role::Responder)
        });
        return forbidden(format!(
            "{what} needs a responder's token: token `{}` is a viewer's, which gets the store's redacted view only; ask for a responder's token from a UI connected with the role {group} (`worldline ui --token NAME=responder`)",
            reader.name
        ));
    }
    let responder = reader.role == Some(Role::Responder);
    let unredacted = asked && responder;
    // A form re-executes its run (fork, replay, diff), reading it raw: a
    // responder's is audited as the CLI's `fork` and `replay` are.
    if responder && (asked || req.method() != axum::http::Method::GET) {
        let route = format!("ui {} {}", req.method(), req.uri().path());
        let named = runs_named(&req);
        let (a, who) = (app.clone(), reader.name.clone());
        let noted = tokio::task::spawn_blocking(move || {
            let ids: Vec<String> = named
                .iter()
                .map(|r| {
                    a.store
                        .resolve_run_id(r)
                        .map_or_else(|_| r.clone(), |p| run::id_of(&p))
                })
                .collect();
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            a.store.audit_raw(Some(&who), &ids, &route)
        })
        .await;
        match noted {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return forbidden(format!("{e:#}")),
            Err(e) => return forbidden(format!("the audit failed: {e}")),
        }
    }
    req.extensions_mut().insert(Viewing { reader, unredacted });
    next.run(req).await
}

/// The readers to issue tokens to: on a database store, those asked for
/// (a role above the connection's refused), else one named after the
/// database user with its role; on a folder store one of no role.
pub(crate) fn readers(store: &StoreDir, cfg: &Config) -> Result<Vec<guard::Reader>> {
    let Some(db) = store.database() else {
        if !cfg.tokens.is_empty() {
            return Err(worldline_case::error::InputError::new(
                "--token",
                "tokens with roles are a database store's (a folder store has no roles)",
            )
            .into());
        }
        return Ok(Vec::new());
    };
    if let Some(file) = &cfg.redact {
        return Err(worldline_case::error::InputError::new(
            "--redact",
            format!("{}: {}", file.display(), worldline_store::store::OWN_POLICY),
        )
        .into());
    }
    if cfg.unredacted {
        return Err(worldline_case::error::InputError::new(
            "--unredacted",
            "a database store's UI shows the store's policy: a responder's token asks for a page raw with `?unredacted=1` (audited)",
        )
        .into());
    }
    if cfg.tokens.is_empty() {
        return Ok(vec![guard::Reader {
            name: db.user.clone(),
            role: Some(db.role),
        }]);
    }
    // A name given twice could not be told apart in the audit.
    let mut named = std::collections::BTreeSet::new();
    if let Some((twice, _)) = cfg.tokens.iter().find(|(name, _)| !named.insert(name)) {
        return Err(worldline_case::error::InputError::new(
            "--token",
            format!("`{twice}` is named twice: the audit tells a token's reads by its name; give each token a name of its own"),
        )
        .into());
    }
    cfg.tokens
        .iter()
        .map(|(name, role)| {
            let role = role.unwrap_or(db.role);
            if role == Role::Responder && db.role == Role::Viewer {
                let refused = db.needs(Role::Responder, &format!("a responder's token (`{name}`)"));
                return Err(worldline_store::store::db_error(refused).into());
            }
            Ok(guard::Reader {
                name: name.clone(),
                role: Some(role),
            })
        })
        .collect()
}
